/**
 * What the dashboard asks before an action that cannot simply be taken back, worded as the extension's own
 * commands ask (Forget explains that the value is refused from then on). Shown by the editor as a modal dialog
 * (`host/confirm`); pure, unit-tested in test/unit/webview-confirm.test.ts.
 */
import type { Memory } from '../../daemon/src/protocol/types';

export interface Question {
  message: string;
  detail?: string;
  /** The label of the button that goes ahead (the other one cancels). */
  confirm: string;
}

type Named = Pick<Memory, 'namespace' | 'key'>;
const name = (m: Named) => `${m.namespace}/${m.key}`;
const UNSAVED = ' Your unsaved changes to it are discarded too.';

export function deleteQuestion(m: Named, unsaved = false): Question {
  return {
    message: `Delete "${m.key}"?`,
    detail: `Agents stop seeing ${name(m)}. You can undo this right after, or restore it later from its history.${unsaved ? UNSAVED : ''}`,
    confirm: 'Delete',
  };
}

/** The same words as the extension's "Cairn: Forget Memory" command, plus the one way back. */
export function forgetQuestion(m: Named, unsaved = false): Question {
  return {
    message: `Forget "${m.key}"?`,
    detail:
      `Cairn deletes ${name(m)} and refuses to store this value in ${m.namespace} again (agents cannot re-learn it). ` +
      `This is permanent for that value: a later write of it is refused, until someone restores this memory from its history.${unsaved ? UNSAVED : ''}`,
    confirm: 'Forget',
  };
}

export function rejectQuestion(list: Named[]): Question {
  const namespaces = [...new Set(list.map((m) => m.namespace))].join(', ');
  const shown = list.slice(0, 5).map(name).join(', ') + (list.length > 5 ? ` and ${list.length - 5} more` : '');
  return {
    message: list.length === 1 ? `Reject "${list[0].key}"?` : `Reject ${list.length} proposed memories?`,
    detail:
      `Cairn deletes ${shown} and refuses these values in ${namespaces} from then on, so agents do not propose them again. ` +
      'You can undo this right after.',
    confirm: list.length === 1 ? 'Reject' : `Reject ${list.length}`,
  };
}

/** Before closing, switching away from or acting on a memory whose edit is not saved. */
export function discardQuestion(label: string, fields: string[], then: string): Question {
  return {
    message: `Discard your unsaved changes to "${label.slice(label.lastIndexOf('/') + 1)}"?`,
    detail: `${fields.length ? `You changed ${fields.join(', ')} of ${label} and did not save. ` : `You did not save your edit of ${label}. `}${then}`,
    confirm: 'Discard changes',
  };
}
