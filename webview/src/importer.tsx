/** Import/export: export a scope to JSON Lines; import with a preview of what would change, then a progress bar. */
import { useState } from 'preact/hooks';
import type { WebviewResult } from '../../daemon/src/protocol/webview';
import { SCOPES, scopeFor, type ScopeKey } from './state';
import { ErrorLine, errorText, Icon, useEnv, type Shown } from './ui';

const OUTCOME_LABEL: Record<string, string> = {
  new: 'New (will be added)',
  unchanged: 'Unchanged (already here)',
  changed: 'Changed (newer in the file; kept as stored)',
  conflicting: 'Conflicting (differs from the store; kept as stored)',
  refusedDeleted: 'Refused: deleted here',
  refusedForgotten: 'Refused: forgotten here',
};

export function ImportTab() {
  const env = useEnv();
  const [scope, setScope] = useState<ScopeKey>('project');
  const [exported, setExported] = useState<string | null>(null);
  const [preview, setPreview] = useState<WebviewResult<'host/importPreview'> | null>(null);
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
  const [result, setResult] = useState<WebviewResult<'host/importApply'> | null>(null);
  const [error, setError] = useState<Shown>(null);
  const [picking, setPicking] = useState(false);
  const exportScope = async () => {
    setError(null);
    try {
      const sc = scopeFor(scope, env.init.projectNamespace);
      const r = await env.rpc.request('host/export', sc ? { scope: sc } : {});
      setExported(r.file ? `Exported ${r.records} records to ${r.file}.` : 'Export cancelled.');
    } catch (e) {
      setError(errorText(e));
    }
  };
  // the editor's own open dialog (the extension reads the file), not the browser's "Choose File" control
  const pickFile = async () => {
    setError(null);
    setResult(null);
    setPicking(true);
    try {
      const p = await env.rpc.request('host/importPick', {});
      if (p) setPreview(p);
    } catch (e) {
      setPreview(null);
      setError(errorText(e));
    } finally {
      setPicking(false);
    }
  };
  const apply = async () => {
    if (!preview) return;
    setError(null);
    setProgress({ done: 0, total: 0 });
    try {
      setResult(
        await env.rpc.request('host/importApply', { token: preview.token }, { onProgress: (done, total) => setProgress({ done, total }) }),
      );
      setPreview(null);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setProgress(null);
    }
  };
  const c = preview?.preview.counts;
  return (
    <section aria-label="Import and export" class="importer">
      <h2>Export</h2>
      <div class="row">
        <select aria-label="Scope to export" value={scope} onChange={(e) => setScope((e.target as HTMLSelectElement).value as ScopeKey)}>
          {SCOPES.map((k) => (
            <option value={k}>{k === 'all' ? 'everything' : k}</option>
          ))}
        </select>
        <button type="button" onClick={exportScope}>
          <Icon name="export" />
          Export to JSON Lines…
        </button>
        {exported ? <span role="status">{exported}</span> : null}
      </div>
      <h2>Import</h2>
      <div class="row">
        <button type="button" class="secondary" disabled={picking} onClick={() => void pickFile()}>
          <Icon name="folder-opened" />
          Choose a file to import…
        </button>
        <span class="meta">{preview ? preview.name : 'A JSON Lines file from a Cairn export; nothing is written before you confirm.'}</span>
      </div>
      {preview && c ? (
        <div class="preview" aria-label="Import preview">
          <p>{`${preview.name}: ${preview.lines} records. Nothing is written until you import; existing memories are never overwritten.`}</p>
          <table class="counts" aria-label="What the import would do">
            <tbody>
              {Object.entries(c).map(([k, v]) => (
                <tr key={k} data-outcome={k}>
                  <th scope="row">{OUTCOME_LABEL[k] ?? k}</th>
                  <td>{v}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {preview.preview.episodes && preview.preview.events && (preview.preview.records.episodes ?? 0) > 0 ? (
            <p>{`Episodes: ${preview.preview.episodes.new} new, ${preview.preview.episodes.existing} already here; events: ${preview.preview.events.new} new, ${preview.preview.events.existing} already here${preview.preview.episodes.refused + preview.preview.events.refused ? `, ${preview.preview.episodes.refused + preview.preview.events.refused} refused` : ''}.`}</p>
          ) : null}
          <details>
            <summary>{`Memories in the file${preview.preview.truncated ? ' (first ones)' : ''}`}</summary>
            <ul>
              {preview.preview.items.map((i) => (
                <li
                  key={i.id}
                >{`${i.namespace}/${i.key}: ${OUTCOME_LABEL[i.outcome] ?? i.outcome} (file v${i.fileVersion}${i.storeVersion !== null ? `, store v${i.storeVersion}` : ''})`}</li>
              ))}
            </ul>
          </details>
          <div class="row">
            <button type="button" disabled={!!progress} onClick={apply}>
              {`Import ${c.new} new memor${c.new === 1 ? 'y' : 'ies'}`}
            </button>
            <button type="button" class="secondary" onClick={() => setPreview(null)}>
              Cancel
            </button>
          </div>
        </div>
      ) : null}
      {progress ? <progress aria-label="Import progress" max={Math.max(1, progress.total)} value={progress.done} /> : null}
      {result ? (
        <p role="status">{`Imported ${result.memories} memories, ${result.history} history entries, ${result.links} links${result.events ? `, ${result.episodes ?? 0} episodes, ${result.events} events` : ''}; ${result.skipped} skipped.`}</p>
      ) : null}
      <ErrorLine error={error} />
    </section>
  );
}
