/** A memory's history in the detail view: each version with its diff to the one before, and restore. */
import { useEffect, useState } from 'preact/hooks';
import type { HistoryEntry, Memory } from '../../daemon/src/protocol/types';
import { describeState, lineDiff } from './diff';
import { ErrorLine, errorText, Time, useEnv, type Shown } from './ui';

export function History({ memory, onRestore }: { memory: Memory; onRestore: () => void }) {
  const env = useEnv();
  const [entries, setEntries] = useState<HistoryEntry[] | null>(null);
  const [picked, setPicked] = useState<number[]>([]);
  const [error, setError] = useState<Shown>(null);
  useEffect(() => {
    env.rpc.request('history', { id: memory.id, limit: 200 }).then(
      (r) => {
        setEntries(r.entries);
        setError(null);
      },
      (e) => setError(errorText(e)),
    );
  }, [memory.id, memory.version, env.changeTick]);
  if (error) return <ErrorLine error={error} />;
  if (!entries) return <p class="meta">Loading…</p>;
  const pick = (seq: number) => setPicked(picked.includes(seq) ? picked.filter((s) => s !== seq) : [...picked.slice(-1), seq]);
  const chosen = entries.filter((e) => picked.includes(e.seq)).sort((a, b) => a.seq - b.seq);
  const chain = entries.filter((e) => e.op === 'supersede' || (e.detail && 'supersededBy' in e.detail));
  return (
    <section aria-label="History">
      {memory.deletedAt ? (
        <p>
          {'Deleted '}
          <Time iso={memory.deletedAt} />
          {` by ${memory.deletedBy ?? 'unknown'}. `}
          <button type="button" onClick={onRestore}>
            Restore this memory
          </button>
        </p>
      ) : null}
      <p class="meta">Pick two versions to compare them (or one to compare it with the one before).</p>
      <div class="table-scroll">
        <table class="history">
          <thead>
            <tr>
              <th scope="col">
                <span class="visually-hidden">Compare</span>
              </th>
              <th scope="col">Version</th>
              <th scope="col">Op</th>
              <th scope="col">Actor</th>
              <th scope="col">Reason</th>
              <th scope="col">Time</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.seq}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Compare version ${e.version} (${e.op})`}
                    checked={picked.includes(e.seq)}
                    onChange={() => pick(e.seq)}
                  />
                </td>
                <td>{e.version}</td>
                <td>{e.op}</td>
                <td>{e.actor}</td>
                <td>{e.reason ?? ''}</td>
                <td>
                  <Time iso={e.at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {chain.length ? (
        <p class="meta">{`Supersession: ${chain.map((e) => `${e.op} at version ${e.version}${e.detail?.supersededBy ? ` → ${String(e.detail.supersededBy)}` : ''}`).join('; ')}`}</p>
      ) : null}
      {chosen.length ? (
        <Diff
          from={chosen.length === 2 ? chosen[0].state : chosen[0].previous}
          to={chosen.length === 2 ? chosen[1].state : chosen[0].state}
          title={
            chosen.length === 2
              ? `Version ${chosen[0].version} → ${chosen[1].version}`
              : `Before → after ${chosen[0].op} (version ${chosen[0].version})`
          }
        />
      ) : null}
    </section>
  );
}

function Diff({ from, to, title }: { from: Memory | null; to: Memory | null; title: string }) {
  const lines = lineDiff(describeState(from), describeState(to));
  return (
    <figure class="diff" aria-label="Diff">
      <figcaption>{title}</figcaption>
      <pre>
        {lines.map((l, i) => (
          <div key={i} class={`diff-${l.op}`}>
            {`${l.op === 'add' ? '+ ' : l.op === 'del' ? '- ' : '  '}${l.text}`}
          </div>
        ))}
      </pre>
    </figure>
  );
}
