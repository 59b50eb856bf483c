/**
 * The Branches tab's "New branch" form (docs/branches.md): a name (checked with the protocol's branch-name rule
 * before sending), the namespace it branches (the project namespace by default) and, optionally, the open branch it
 * starts from (picking one outside the namespace moves the namespace to that branch's root). branch/create's errors are shown at the field they name; the tab reloads its list on success.
 */
import { useState } from 'preact/hooks';
import type { Branch } from '../../daemon/src/protocol/types';
import {
  newBranchErrorField,
  newBranchForm,
  newBranchParams,
  newBranchProblems,
  pickStart,
  type NewBranchField,
  type NewBranchForm,
} from './branches';
import { Field, fieldControl } from './field';
import { RequestError } from './rpc';
import { ErrorLine, errorText, Icon, useEnv, type Shown } from './ui';

export function NewBranch({
  open,
  onCreated,
  onCancel,
  onRefused,
}: {
  open: Branch[];
  onCreated: (b: Branch) => void;
  onCancel: () => void;
  /** A refusal may mean the list is stale (a branch made elsewhere sends no notification): the tab reloads it. */
  onRefused: () => void;
}) {
  const env = useEnv();
  const [form, setForm] = useState<NewBranchForm>(() => newBranchForm(env.init.projectNamespace));
  const [errors, setErrors] = useState<Partial<Record<NewBranchField, Shown>>>({});
  const [error, setError] = useState<Shown>(null);
  const [busy, setBusy] = useState(false);
  const set = (f: NewBranchField, v: string) => {
    setForm((old) => (f === 'from' ? pickStart(old, v, open) : { ...old, [f]: v }));
    setErrors((old) => ({ ...old, [f]: null, ...(f === 'from' ? { root: null } : {}) }));
  };
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const problems = newBranchProblems(form);
    setErrors(problems);
    if (Object.keys(problems).length) return;
    setBusy(true);
    try {
      onCreated(await env.rpc.request('branchCreate', newBranchParams(form)));
    } catch (err) {
      const f = err instanceof RequestError ? newBranchErrorField(err.error) : null;
      if (f) setErrors({ [f]: errorText(err) });
      else setError(errorText(err));
      onRefused();
    } finally {
      setBusy(false);
    }
  };
  const field = (f: NewBranchField, label: string, input: preact.ComponentChild, hint?: string) => (
    <Field id={`branch-${f}`} label={label} hint={hint} error={errors[f]}>
      {input}
    </Field>
  );
  const described = (f: NewBranchField) => fieldControl(`branch-${f}`, errors[f]);
  return (
    <section class="detail" aria-label="New memory branch">
      <h2>New memory branch</h2>
      <form class="edit" onSubmit={create}>
        {field(
          'name',
          'Name',
          <input {...described('name')} value={form.name} onInput={(e) => set('name', (e.target as HTMLInputElement).value)} />,
          'Letters, digits, ".", "_", "-" and "/", e.g. feature/db-move',
        )}
        {field(
          'root',
          'Namespace it branches',
          <input {...described('root')} value={form.root} onInput={(e) => set('root', (e.target as HTMLInputElement).value)} />,
          "The branch's writes must lie under it.",
        )}
        {field(
          'from',
          'Start from',
          <select {...described('from')} value={form.from} onChange={(e) => set('from', (e.target as HTMLSelectElement).value)}>
            <option value="">the base (what is stored now)</option>
            {open.map((b) => (
              <option key={b.id} value={b.name}>{`branch ${b.name} (${b.root})`}</option>
            ))}
          </select>,
        )}
        <div class="row">
          <button type="submit" disabled={busy}>
            <Icon name="git-branch" />
            Create branch
          </button>
          <button type="button" class="secondary" onClick={onCancel}>
            Cancel
          </button>
        </div>
        <ErrorLine error={error} />
      </form>
    </section>
  );
}
