/**
 * A memory's edit form (saved with ifVersion; a conflict shows both versions side by side to choose or merge; daemon
 * validation errors next to the field they name): the detail view's Details tab and the review queue's editor.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Memory } from '../../daemon/src/protocol/types';
import {
  conflictingFields,
  FORM_FIELDS,
  formFieldOf,
  FormError,
  formFromMemory,
  mergeForms,
  upsertFromForm,
  type Choice,
  type Form,
  type FormField,
} from './form';
import { RequestError } from './rpc';
import { discardQuestion } from './confirm';
import { ErrorLine, errorText, Icon, label, useEnv, type Shown } from './ui';

function FieldError({ id, error }: { id: string; error: NonNullable<Shown> }) {
  const p = typeof error === 'string' ? { text: error, details: null } : error;
  return (
    <span class="field-error" id={id} role="alert">
      <span class="error-text">{p.text}</span>
      {p.details ? <span class="error-details">{`Details: ${p.details}`}</span> : null}
    </span>
  );
}

const FIELD_LABEL: Record<FormField, string> = {
  value: 'Value',
  kind: 'Kind',
  tags: 'Tags (comma separated)',
  importance: 'Importance (0–1)',
  confidence: 'Confidence (0–1)',
  validFrom: 'Valid from (ISO-8601)',
  validTo: 'Valid to (ISO-8601)',
  expiresAt: 'Expires at (ISO-8601)',
  anchors: 'Anchors (path:start-end#symbol, one a line)',
  properties: 'Properties (JSON object)',
};

export function EditForm({ memory, onSaved, approve }: { memory: Memory; onSaved: (m: Memory) => void; approve?: boolean }) {
  const env = useEnv();
  const draft = env.drafts[memory.id];
  const [form, setForm] = useState<Form>(() => draft?.form ?? formFromMemory(memory));
  const [base, setBase] = useState(draft?.base ?? memory.version);
  const [errors, setErrors] = useState<Partial<Record<FormField, Shown>>>({});
  const [error, setError] = useState<Shown>(null);
  const [conflict, setConflict] = useState<Memory | null>(null);
  const [choices, setChoices] = useState<Partial<Record<FormField, Choice>>>({});
  const [saved, setSaved] = useState<string | null>(null);
  // A new version from the store replaces the form, unless the user has an unsaved edit of it (kept, and saved
  // against the version it was made from, so the conflict view shows both).
  useEffect(() => {
    const d = env.drafts[memory.id];
    setForm(d?.form ?? formFromMemory(memory));
    setBase(d?.base ?? memory.version);
    setConflict(null);
    setErrors({});
  }, [memory.id, memory.version]);
  const change = (f: FormField, v: string) => {
    const next = { ...form, [f]: v };
    setForm(next);
    setSaved(null);
    if (errors[f]) setErrors({ ...errors, [f]: undefined });
    env.setDraft(memory.id, { label: label(memory), form: next, stored: formFromMemory(memory), base });
  };
  const discard = async () => {
    const d = env.drafts[memory.id];
    if (d && !(await env.ask(discardQuestion(d.label, d.changed, 'The form shows the stored version again.')).catch(() => false))) return;
    env.setDraft(memory.id, null);
    setForm(formFromMemory(memory));
    setBase(memory.version);
    setErrors({});
    setError(null);
  };
  const save = async (toSave: Form, ifVersion: number) => {
    setErrors({});
    setError(null);
    try {
      const params = upsertFromForm(toSave, memory, ifVersion, {
        reason: approve ? 'approved after editing in the dashboard' : 'edited in the dashboard',
        ...(approve ? { status: 'active' as const } : {}),
      });
      const r = await env.rpc.request('upsert', params);
      setConflict(null);
      setSaved(r.changed ? `Saved version ${r.memory.version}.` : 'Nothing changed.');
      env.setDraft(memory.id, null);
      onSaved(r.memory);
    } catch (e) {
      if (e instanceof FormError) return setErrors({ [e.field]: e.message });
      if (e instanceof RequestError && e.errorName === 'VersionConflict') {
        try {
          const theirs = await env.rpc.request('get', { id: memory.id, includeDeleted: true });
          setConflict(theirs);
          setChoices({});
        } catch (e2) {
          setError(errorText(e2));
        }
        return;
      }
      const f = e instanceof RequestError ? formFieldOf(e.field) : undefined;
      if (f) setErrors({ [f]: errorText(e) });
      else setError(errorText(e));
    }
  };
  if (conflict) {
    const fields = conflictingFields(form, conflict);
    const theirs = formFromMemory(conflict);
    return (
      <section class="conflict" aria-label="Version conflict">
        <h3>{`Version conflict: you edited version ${base}, the store now holds version ${conflict.version}`}</h3>
        <p class="meta">{`${fields.length} field${fields.length === 1 ? '' : 's'} differ. Choose a side per field, or keep one version whole.`}</p>
        <table class="sidebyside">
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Your version</th>
              <th scope="col">{`Stored version ${conflict.version}`}</th>
            </tr>
          </thead>
          <tbody>
            {fields.map((f) => (
              <tr key={f}>
                <th scope="row">{f}</th>
                <td>
                  <label class="choice">
                    <input
                      type="radio"
                      name={`pick-${f}`}
                      checked={(choices[f] ?? 'mine') === 'mine'}
                      onChange={() => setChoices({ ...choices, [f]: 'mine' })}
                      aria-label={`Use your ${f}`}
                    />
                    <pre>{form[f]}</pre>
                  </label>
                </td>
                <td>
                  <label class="choice">
                    <input
                      type="radio"
                      name={`pick-${f}`}
                      checked={choices[f] === 'theirs'}
                      onChange={() => setChoices({ ...choices, [f]: 'theirs' })}
                      aria-label={`Use stored ${f}`}
                    />
                    <pre>{theirs[f]}</pre>
                  </label>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <div class="row">
          <button type="button" onClick={() => save(form, conflict.version)}>
            Keep mine
          </button>
          <button
            type="button"
            onClick={() => {
              setConflict(null);
              env.setDraft(memory.id, null);
              onSaved(conflict);
            }}
          >
            Take stored
          </button>
          <button type="button" onClick={() => save(mergeForms(form, conflict, choices), conflict.version)}>
            Save merge
          </button>
        </div>
        <ErrorLine error={error} />
      </section>
    );
  }
  return (
    <form
      class="edit"
      aria-label="Edit memory"
      onSubmit={(e) => {
        e.preventDefault();
        void save(form, base);
      }}
    >
      {FORM_FIELDS.map((f) => {
        const id = `field-${f}`;
        const err = errors[f];
        return (
          <div class="field" key={f}>
            <label for={id}>{FIELD_LABEL[f]}</label>
            {f === 'kind' ? (
              <select id={id} value={form.kind} onChange={(e) => change('kind', (e.target as HTMLSelectElement).value)}>
                {env.init.kinds.map((k) => (
                  <option value={k}>{k}</option>
                ))}
              </select>
            ) : f === 'value' || f === 'anchors' || f === 'properties' ? (
              <textarea
                id={id}
                rows={f === 'value' ? 5 : 3}
                value={form[f]}
                aria-invalid={!!err}
                aria-describedby={err ? `${id}-error` : undefined}
                onInput={(e) => change(f, (e.target as HTMLTextAreaElement).value)}
              />
            ) : (
              <input
                id={id}
                value={form[f]}
                aria-invalid={!!err}
                aria-describedby={err ? `${id}-error` : undefined}
                onInput={(e) => change(f, (e.target as HTMLInputElement).value)}
              />
            )}
            {err ? <FieldError id={`${id}-error`} error={err} /> : null}
          </div>
        );
      })}
      <div class="row">
        <button type="submit">
          <Icon name={approve ? 'check' : 'save'} />
          {approve ? 'Save and approve' : 'Save'}
        </button>
        {env.drafts[memory.id] ? (
          <>
            <button type="button" class="secondary" onClick={discard}>
              Discard changes
            </button>
            <span class="meta" role="status">
              Unsaved changes
            </span>
          </>
        ) : saved ? (
          <span role="status">{saved}</span>
        ) : null}
      </div>
      <ErrorLine error={error} />
    </form>
  );
}
