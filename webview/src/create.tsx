/** "New memory": a small form (namespace, key, value, kind, tags) that creates a memory and opens it. */
import { useState } from 'preact/hooks';
import { Field, fieldControl } from './field';
import { RequestError } from './rpc';
import { ErrorLine, errorText, useEnv, type Shown } from './ui';

type FieldName = 'namespace' | 'key' | 'value' | 'kind' | 'tags';

export function NewMemory({ onCreated, onCancel }: { onCreated: (id: string) => void; onCancel: () => void }) {
  const env = useEnv();
  const [ns, setNs] = useState(env.init.projectNamespace ?? 'user');
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [kind, setKind] = useState(env.init.kinds.includes('note') ? 'note' : env.init.kinds[0]);
  const [tags, setTags] = useState('');
  const [errors, setErrors] = useState<Partial<Record<FieldName, Shown>>>({});
  const [error, setError] = useState<Shown>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    setErrors({});
    setError(null);
    try {
      const r = await env.rpc.request('upsert', {
        namespace: ns.trim(),
        key: key.trim(),
        value,
        kind: kind as never,
        tags: tags
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
        ifVersion: 0, // a new memory: never overwrite one that exists under this key
        actor: 'dashboard',
        reason: 'created in the dashboard',
      });
      onCreated(r.memory.id);
    } catch (err) {
      const head = err instanceof RequestError ? err.field?.split(/[.[]/)[0] : undefined;
      if (err instanceof RequestError && err.errorName === 'VersionConflict')
        setErrors({ key: `${ns.trim()}/${key.trim()} already exists; choose another key, or open it from the search.` });
      else if (head && ['namespace', 'key', 'value', 'kind', 'tags'].includes(head)) setErrors({ [head]: errorText(err) });
      else setError(errorText(err));
    }
  };
  const field = (f: FieldName, label: string, input: preact.ComponentChild) => (
    <Field id={`new-${f}`} label={label} error={errors[f]}>
      {input}
    </Field>
  );
  const described = (f: FieldName) => fieldControl(`new-${f}`, errors[f]);
  const text = (f: FieldName, v: string, set: (s: string) => void) => (
    <input {...described(f)} value={v} onInput={(e) => set((e.target as HTMLInputElement).value)} />
  );
  return (
    <section class="detail" aria-label="New memory">
      <h2>New memory</h2>
      <form class="edit" onSubmit={create}>
        {field('namespace', 'Namespace', text('namespace', ns, setNs))}
        {field('key', 'Key', text('key', key, setKey))}
        {field(
          'value',
          'Value',
          <textarea {...described('value')} rows={5} value={value} onInput={(e) => setValue((e.target as HTMLTextAreaElement).value)} />,
        )}
        {field(
          'kind',
          'Kind',
          <select {...described('kind')} value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
            {env.init.kinds.map((k) => (
              <option value={k}>{k}</option>
            ))}
          </select>,
        )}
        {field('tags', 'Tags (comma separated)', text('tags', tags, setTags))}
        <div class="row">
          <button type="submit">Create</button>
          <button type="button" class="secondary" onClick={onCancel}>
            Cancel
          </button>
        </div>
        <ErrorLine error={error} />
      </form>
    </section>
  );
}
