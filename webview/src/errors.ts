/**
 * Daemon errors as sentences a person understands. The dashboard shows `text` (one sentence, naming the field in
 * the words the form uses) and keeps the error's name, code and raw message in `details`, for bug reports and for
 * anyone who knows the protocol. Pure, unit-tested against the daemon's real messages (test/unit/webview-errors).
 */
import type { WebviewError } from '../../daemon/src/protocol/webview';

export interface Problem {
  /** One sentence for a person. */
  text: string;
  /** `Name (code): raw message`, or null for problems the dashboard found itself. */
  details: string | null;
}

/** What the form and the rest of the dashboard call each params field. */
const FIELD_LABEL: Record<string, string> = {
  value: 'The value',
  kind: 'Kind',
  tags: 'Tags',
  importance: 'Importance',
  confidence: 'Confidence',
  validFrom: 'Valid from',
  validTo: 'Valid to',
  expiresAt: 'Expires at',
  anchors: 'Anchors',
  properties: 'Properties',
  namespace: 'The namespace',
  key: 'The key',
  query: 'The search text',
  file: 'The file',
  // branch/create (the Branches tab's "New branch")
  name: 'The branch name',
  root: 'The namespace',
  from: 'The branch to start from',
};

const SUB_LABEL: Record<string, string> = { path: 'path', startLine: 'start line', endLine: 'end line', symbol: 'symbol' };

/** `anchors[0].startLine` -> "The start line of anchor 1"; `tags[2]` -> "Tag 3"; `properties.ticket` -> 'Property "ticket"'. */
export function fieldLabel(field: string): string {
  const anchor = /^anchors\[(\d+)\](?:\.(\w+))?/.exec(field);
  if (anchor)
    return anchor[2] ? `The ${SUB_LABEL[anchor[2]] ?? anchor[2]} of anchor ${Number(anchor[1]) + 1}` : `Anchor ${Number(anchor[1]) + 1}`;
  const tag = /^tags\[(\d+)\]/.exec(field);
  if (tag) return `Tag ${Number(tag[1]) + 1}`;
  const prop = /^properties\.(.+)$/.exec(field);
  if (prop) return `Property "${prop[1]}"`;
  const head = field.split(/[.[]/)[0];
  return FIELD_LABEL[head] ?? `The field "${field}"`;
}

/** The rule a validation message states, as the end of a sentence about the field ("must be a number"). */
function rule(field: string, message: string): string {
  const head = field.split(/[.[]/)[0];
  if (head === 'importance' || head === 'confidence') return 'must be a number between 0 and 1';
  if (/Invalid ISO datetime|datetime/i.test(message) || ['validFrom', 'validTo', 'expiresAt'].includes(head))
    return 'must be a date and time such as 2026-05-01T09:00:00Z, or empty';
  let m: RegExpExecArray | null;
  // The daemon's own words (protocol/errors.ts fromZodError), then zod's, which older daemons send.
  if ((m = /is longer than (\d+) characters/.exec(message))) return `can be at most ${m[1]} characters long`;
  if ((m = /is shorter than (\d+) characters/.exec(message))) return `must be at least ${m[1]} characters long`;
  if ((m = /takes at most (\d+) items/.exec(message))) return `can hold at most ${m[1]} entries`;
  if ((m = /must be at least (-?[\d.]+)$/.exec(message))) return `must be ${m[1]} or more`;
  if ((m = /must be at most (-?[\d.]+)$/.exec(message))) return `must be ${m[1]} or less`;
  if ((m = /must be one of (.+), not /.exec(message))) return `must be one of ${m[1].replace(/"/g, '')}`;
  if ((m = /must be (an? \w+), not /.exec(message))) return `must be ${m[1]}`;
  if ((m = /expected string to have <=(\d+) characters/.exec(message))) return `can be at most ${m[1]} characters long`;
  if (/expected string to have >=1 characters|is empty|cannot be empty/.test(message)) return 'cannot be empty';
  if ((m = /expected string to have >=(\d+) characters/.exec(message))) return `must be at least ${m[1]} characters long`;
  if ((m = /expected array to have <=(\d+) items/.exec(message))) return `can hold at most ${m[1]} entries`;
  if ((m = /expected number to be >=(-?[\d.]+)/.exec(message))) return `must be ${m[1]} or more`;
  if ((m = /expected number to be <=(-?[\d.]+)/.exec(message))) return `must be ${m[1]} or less`;
  if ((m = /expected one of (.+)$/.exec(message))) return `must be one of ${m[1].replace(/"/g, '').split('|').join(', ')}`;
  if ((m = /expected (\w+), received/.exec(message))) return `must be ${/^[aeiou]/.test(m[1]) ? 'an' : 'a'} ${m[1]}`;
  if (/Unrecognized key/i.test(message)) return 'is not one Cairn knows';
  if ((m = /is not valid: (.+)$/.exec(message))) return `is not valid: ${m[1].replace(/[.]$/, '')}`; // a pattern's own rule
  return 'is not valid';
}

/** A sentence: a capital first letter and a full stop. */
export function sentence(s: string): string {
  const t = s.trim().replace(/\s+/g, ' ');
  if (!t) return 'Something went wrong.';
  const c = t[0].toUpperCase() + t.slice(1);
  return /[.!?]$/.test(c) ? c : `${c}.`;
}

/** One daemon (or host) error as a sentence, with its name, code and raw message kept as details. */
export function describeProblem(e: WebviewError): Problem {
  const details = `${e.name} (${e.code}): ${e.message}`;
  const field = typeof e.data.field === 'string' ? e.data.field : '';
  const d = e.data as Record<string, unknown>;
  const text = ((): string => {
    switch (e.name) {
      case 'InvalidParams':
        if (field === 'token') return 'That import preview is gone; choose the file again.';
        if (field === 'file') return sentence(`The file is not a Cairn export: ${e.message.replace(/^[^:]*: /, '')}`);
        if (field === 'anchor.path') return 'Cairn cannot open the anchored file; it may have been moved, renamed or deleted.';
        if (field === 'root' && /outside branch/.test(e.message))
          return 'The namespace must lie inside the namespace of the branch it starts from.';
        if (field === 'root' && /team namespaces/.test(e.message))
          return 'Memory branches of team namespaces are not supported; choose a namespace of your own store.';
        return field ? `${fieldLabel(field)} ${rule(field, e.message)}.` : 'Cairn refused the request: some of what was sent is not valid.';
      case 'InvalidFilter':
        return 'One of the filters is not valid; check the tags, sources and dates.';
      case 'InvalidNamespace':
        return 'That namespace name is not valid: use lowercase letters, digits, "-" and "_", in parts separated by dots.';
      case 'NotFound':
        if (field === 'anchor.path') return 'Cairn cannot open the anchored file; it may have been moved, renamed or deleted.';
        if (field === 'token') return 'That import preview is gone; choose the file again.';
        if (field === 'from') return 'No open memory branch has that name to start from; it may have been merged or discarded.';
        if (/no open branch/.test(e.message)) return 'That memory branch is not open any more; it may have been merged or discarded.';
        return 'Cairn cannot find that memory; it may have been deleted or purged.';
      case 'Deleted':
        return `This memory was deleted${typeof d.deletedBy === 'string' ? ` by ${d.deletedBy}` : ''}; restore it before changing it.`;
      case 'RejectedValue':
        return 'This value was forgotten in this namespace, so Cairn will not store it again.';
      case 'VersionConflict':
        return `This memory changed elsewhere${typeof d.currentVersion === 'number' ? ` (it is now version ${d.currentVersion})` : ''}; reload it to see the change, then edit again.`;
      case 'ValueTooLarge':
        return `That is too large for Cairn${typeof d.limit === 'number' ? ` (the limit is ${d.limit.toLocaleString('en')})` : ''}; shorten it or split it up.`;
      case 'InvalidState':
        if (/not deleted/.test(e.message)) return 'This memory is not deleted, so there is nothing to restore.';
        if (/itself/.test(e.message)) return 'A memory cannot link to itself.';
        if (field === 'name' && /already open/.test(e.message)) return 'A memory branch of that name is already open; choose another name.';
        if (field === 'gitBranch' && /already followed/.test(e.message))
          return 'The git branch checked out is already followed by another memory branch (cairn.branches.followGit).';
        return 'That cannot be done to this memory in its current state; reload it and try again.';
      case 'StoreBusy':
        return 'The store is busy with another program; try again in a moment.';
      case 'Overloaded':
        return 'The Cairn daemon is at its capacity; try again in a moment.';
      case 'RequestTimeLimit':
      case 'Timeout':
        return 'That took too long and was stopped; narrow it down (a shorter query, fewer filters) and try again.';
      case 'Unavailable':
        if (d.store === 'team') return 'The team database cannot be reached; nothing was written. Try again later.';
        return d.sent === true
          ? 'The Cairn daemon did not answer in time; the change may still have been made, so reload before trying again.'
          : 'Cairn is not connected to its daemon; try again when the status bar shows it connected.';
      case 'Forbidden':
        return 'The team database refused the change: your role may not write to this namespace.';
      case 'Internal':
        return 'Something went wrong inside the Cairn daemon; the details below help a bug report.';
    }
    return sentence(e.message);
  })();
  return { text, details };
}
