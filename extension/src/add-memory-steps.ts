/**
 * The steps of "Cairn: Add Memory", as plain data (no vscode import, so unit tests run it): one numbering for all
 * the prompts, tags included, and a kind picker whose first item — the one Enter takes — is the kind it announces.
 */
import { MEMORY_KINDS, type MemoryKind } from '../../daemon/src/protocol/types';

export const ADD_MEMORY_STEPS = ['namespace', 'key', 'value', 'kind', 'tags'] as const;
export type AddMemoryStep = (typeof ADD_MEMORY_STEPS)[number];

/** The kind a new memory gets when the user just presses Enter (and the daemon's default when none is given). */
export const DEFAULT_KIND: MemoryKind = 'note';

/** The action offered once the memory is saved, opening it in an editor for a longer, multi-line value. */
export const EDIT_IN_EDITOR = 'Edit in Editor';
/** The value prompt says how to write more than one line. */
export const VALUE_PROMPT_MORE = `(One line here; for more, choose "${EDIT_IN_EDITOR}" once it is saved.)`;

/** "Add Memory (4/5): kind"; the optional step says so. */
export function stepTitle(step: AddMemoryStep): string {
  const i = ADD_MEMORY_STEPS.indexOf(step);
  return `Add Memory (${i + 1}/${ADD_MEMORY_STEPS.length}): ${step}${step === 'tags' ? ' (optional)' : ''}`;
}

export interface KindItem {
  label: MemoryKind;
  description?: string;
}

/** The kind picker's items: the default first (a quick pick's Enter takes the first item), marked as the default. */
export function kindItems(defaultKind: MemoryKind = DEFAULT_KIND): KindItem[] {
  return [defaultKind, ...MEMORY_KINDS.filter((k) => k !== defaultKind)].map((k) =>
    k === defaultKind ? { label: k, description: 'default' } : { label: k },
  );
}

/** Tags as typed ("a, b,,c "), trimmed, empty ones dropped. */
export function parseTags(input: string | undefined): string[] {
  return (input ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}
