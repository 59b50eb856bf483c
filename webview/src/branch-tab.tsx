/**
 * Branches: the open memory branches (docs/branches.md), a "New branch" form (new-branch.tsx) and, for the one
 * picked, what it added, changed and deleted
 * against the base. A change made on both sides since the fork is a conflict shown side by side (the base now and
 * the branch) with a decision each; Merge stays off until every conflict has one. Discard asks first.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Branch, BranchChange, BranchDiffResult, Memory } from '../../daemon/src/protocol/types';
import {
  branchLine,
  changeKey,
  changeOrigin,
  diffSummary,
  discardBranchQuestion,
  gitConflictsText,
  keptDecisions,
  mergedStart,
  mergeResolutions,
  undecided,
  type Decision,
  type Decisions,
} from './branches';
import { NewBranch } from './new-branch';
import { ErrorLine, errorText, Icon, label, Time, useEnv, type Shown } from './ui';

export function BranchesTab({ selected, select }: { selected: string | null; select: (name: string | null) => void }) {
  const env = useEnv();
  const [branches, setBranches] = useState<Branch[] | null>(null);
  const [error, setError] = useState<Shown>(null);
  const [done, setDone] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const load = () =>
    env.rpc.request('branchList', {}).then(
      (r) => {
        setBranches(r.branches);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  useEffect(() => void load(), [env.changeTick]);
  if (!branches) return error ? <ErrorLine error={error} /> : <p class="meta">Loading…</p>;
  const current = branches.find((b) => b.name === selected) ?? null;
  const finished = (text: string) => {
    setDone(text);
    select(null);
    void load();
  };
  return (
    <section aria-label="Memory branches">
      <div class="row">
        <p class="meta" role="status">
          {`${branches.length} open memory branch${branches.length === 1 ? '' : 'es'}.`} {done ?? ''}
        </p>
        <button
          type="button"
          aria-expanded={creating}
          onClick={() => {
            setDone(null);
            setCreating(!creating);
          }}
        >
          <Icon name="add" />
          New branch
        </button>
        {/* branch writes send no change notification (they are not in the change log): reload on demand */}
        <button type="button" class="secondary" onClick={() => void load()}>
          <Icon name="refresh" />
          Refresh
        </button>
      </div>
      {creating ? (
        <NewBranch
          open={branches}
          onCancel={() => setCreating(false)}
          onRefused={() => void load()}
          onCreated={(b) => {
            setCreating(false);
            setDone(`Created ${b.name} of ${b.root}${b.gitBranch !== undefined ? `, following git ${b.gitBranch}` : ''}.`);
            select(b.name);
            void load();
          }}
        />
      ) : null}
      {branches.length ? null : (
        <p class="meta">
          A memory branch keeps an agent's (or your) changes to a namespace apart until you merge them: create one with "New branch" here,
          "Cairn: Create Memory Branch", `cairn branch create` or an agent task with its own branch.
        </p>
      )}
      <ul class="branches" aria-label="Open branches">
        {branches.map((b) => (
          <li key={b.id} class={b.name === selected ? 'selected' : ''}>
            <div class="row">
              <button
                type="button"
                class="link key"
                aria-pressed={b.name === selected}
                onClick={() => {
                  setDone(null);
                  select(b.name === selected ? null : b.name);
                }}
              >
                <Icon name="git-branch" />
                {b.name}
              </button>
              <span class="meta">
                {branchLine(b)} · <Time iso={b.createdAt} />
              </span>
            </div>
            {gitConflictsText(b) ? (
              <p class="notice" role="note">
                {gitConflictsText(b)}
              </p>
            ) : null}
          </li>
        ))}
      </ul>
      <ErrorLine error={error} />
      {current ? <BranchDiff key={current.name} branch={current} onFinished={finished} /> : null}
    </section>
  );
}

function BranchDiff({ branch, onFinished }: { branch: Branch; onFinished: (text: string) => void }) {
  const env = useEnv();
  const [diff, setDiff] = useState<BranchDiffResult | null>(null);
  const [decisions, setDecisions] = useState<Decisions>({});
  const [error, setError] = useState<Shown>(null);
  const [busy, setBusy] = useState(false);
  const load = () =>
    env.rpc.request('branchDiff', { name: branch.name }).then(
      (r) => {
        setDiff(r);
        setDecisions((d) => keptDecisions(r.changes, d));
      },
      (e) => setError(errorText(e)),
    );
  useEffect(() => void load(), [branch.name, branch.writes, env.changeTick]);
  if (!diff) return error ? <ErrorLine error={error} /> : <p class="meta">Loading the branch's changes…</p>;
  const conflicts = diff.changes.filter((c) => c.conflict);
  const plain = diff.changes.filter((c) => !c.conflict);
  const waiting = undecided(diff.changes, decisions);
  const resolutions = mergeResolutions(diff.changes, decisions);
  const decide = (c: BranchChange, d: Decision) => setDecisions((old) => ({ ...old, [changeKey(c)]: d }));
  const merge = async () => {
    if (!resolutions) return;
    setBusy(true);
    setError(null);
    try {
      const r = await env.rpc.request('branchMerge', {
        name: branch.name,
        actor: 'dashboard',
        ...(resolutions.length ? { resolutions } : {}),
      });
      if (r.merged) onFinished(`Merged ${branch.name} into ${branch.root}: ${r.applied} change${r.applied === 1 ? '' : 's'} written.`);
      else {
        // the base changed again meanwhile: new conflicts need decisions, nothing was written
        setError(
          `Not merged: ${r.conflicts.length} conflict${r.conflicts.length === 1 ? '' : 's'} still need a decision; nothing was written.`,
        );
        await load();
      }
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const discard = async () => {
    if (!(await env.ask(discardBranchQuestion(branch)).catch(() => false))) return;
    setBusy(true);
    try {
      const r = await env.rpc.request('branchDiscard', { name: branch.name, actor: 'dashboard' });
      onFinished(`Discarded ${r.name}.`);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="branch-diff" aria-label={`Branch ${branch.name}`}>
      <h2>{`Branch ${branch.name} of ${branch.root}`}</h2>
      <p class="meta">{diffSummary(diff.changes)}</p>
      {conflicts.map((c) => (
        <Conflict key={changeKey(c)} change={c} decision={decisions[changeKey(c)]} decide={(d) => decide(c, d)} />
      ))}
      {plain.length ? (
        <ul class="changes" aria-label="Changes">
          {plain.map((c) => (
            <li key={changeKey(c)}>
              <div class="row">
                <span class={`badge change-${c.change}`}>{c.change}</span>
                <span class="key">{label(c)}</span>
                <span class="meta">{changeOrigin(c)}</span>
              </div>
              {c.change === 'deleted' ? (
                <p class="meta">Deleted on the branch: the merge deletes it on the base.</p>
              ) : (
                <p class="value">{c.branch.value}</p>
              )}
            </li>
          ))}
        </ul>
      ) : null}
      <div class="row">
        <button type="button" disabled={busy || !resolutions} aria-describedby="merge-hint" onClick={() => void merge()}>
          <Icon name="git-merge" />
          {`Merge into ${branch.root}`}
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => void discard()}>
          <Icon name="trash" />
          Discard…
        </button>
      </div>
      <p class="meta" id="merge-hint">
        {waiting.length
          ? `Decide ${waiting.length} more conflict${waiting.length === 1 ? '' : 's'} to merge; nothing is merged until every conflict has a decision.`
          : 'Merging writes every change to the base in one transaction; history records it as yours.'}
      </p>
      <ErrorLine error={error} />
    </section>
  );
}

const sideText = (m: Memory | null, deleted: boolean) => (!m ? '(none)' : deleted || m.deletedAt ? `(deleted)\n${m.value}` : m.value);

function Conflict({
  change: c,
  decision,
  decide,
}: {
  change: BranchChange;
  decision: Decision | undefined;
  decide: (d: Decision) => void;
}) {
  const name = `decide-${changeKey(c)}`;
  const baseHead = c.base ? `Base now (version ${c.base.version})` : 'Base now (none)';
  return (
    <section class="conflict" aria-label={`Conflict: ${label(c)}`}>
      <h3>{`Conflict: ${label(c)}`}</h3>
      <p class="meta">{`Changed on both sides since the branch wrote it (${changeOrigin(c)}).`}</p>
      <table class="sidebyside">
        <thead>
          <tr>
            <th scope="col">{baseHead}</th>
            <th scope="col">{`Branch (${c.change})`}</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>
              <pre>{sideText(c.base, false)}</pre>
            </td>
            <td>
              <pre>{sideText(c.branch, c.change === 'deleted')}</pre>
            </td>
          </tr>
        </tbody>
      </table>
      <fieldset class="decision">
        <legend>{`Decision for ${c.key}`}</legend>
        <label class="choice">
          <input type="radio" name={name} checked={decision?.take === 'branch'} onChange={() => decide({ take: 'branch' })} />
          Take branch
        </label>
        <label class="choice">
          <input type="radio" name={name} checked={decision?.take === 'base'} onChange={() => decide({ take: 'base' })} />
          Take base
        </label>
        <label class="choice">
          <input
            type="radio"
            name={name}
            checked={decision?.take === 'edit'}
            onChange={() => decide({ take: 'edit', value: mergedStart(c) })}
          />
          Edit a merged value
        </label>
        {decision?.take === 'edit' ? (
          <label>
            {`Merged value for ${c.key}`}
            <textarea
              rows={4}
              value={decision.value}
              aria-invalid={!decision.value.trim()}
              onInput={(e) => decide({ take: 'edit', value: (e.target as HTMLTextAreaElement).value })}
            />
          </label>
        ) : null}
      </fieldset>
    </section>
  );
}
