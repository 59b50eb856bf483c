/**
 * A labelled form field with its error under it, as the New memory and New branch forms show them. The control goes
 * in as a child, given `fieldControl`'s props: its id (the label's target) and, while the field has an error,
 * aria-invalid and aria-describedby naming the error line (`<id>-error`), which is announced when it appears.
 */
import type { ComponentChildren } from 'preact';
import { ErrorLine, type Shown } from './ui';

export function Field({
  id,
  label,
  hint,
  error,
  children,
}: {
  id: string;
  label: string;
  hint?: string;
  error: Shown | undefined;
  children: ComponentChildren;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint ? <span class="meta">{hint}</span> : null}
      <ErrorLine error={error ?? null} id={`${id}-error`} />
    </div>
  );
}

/** The props of a Field's control: its id, and while the field has an error, aria-invalid and the error line's id. */
export function fieldControl(id: string, error: Shown | undefined) {
  return { id, 'aria-invalid': !!error, 'aria-describedby': error ? `${id}-error` : undefined };
}
