/**
 * Secrets: the `secret` tag and a detector for values that look like credentials.
 *
 * Tags are normalized on write (trimmed, lowercased, deduplicated, sorted), and every comparison of a
 * tag — the filter grammar, injection, the agent tools — compares normalized forms, so `Secret`,
 * `SECRET` and ` secret` written by an older version still count as `secret`.
 *
 * `detectCredentials` recognises common token formats by their documented shapes (prefixes and
 * lengths) plus a generic `password=` / `api_key: ...` assignment whose value looks random. It is a
 * guard rail against pasting a key into a memory, not a secret scanner: a match makes the store tag the
 * memory `secret` (so it never reaches an agent unless the user allows it) and return a warning.
 */

export const SECRET_TAG = 'secret';

/** One tag in its stored form: trimmed and lowercased (Unicode-aware). */
export function normalizeTag(tag: string): string {
  return tag.trim().toLowerCase();
}

/** A tag list in its stored form: normalized, without duplicates, sorted. Empty tags are dropped by the caller's validation. */
export function normalizeTags(tags: readonly string[]): string[] {
  return [...new Set(tags.map(normalizeTag))].sort();
}

/** True when a memory's tags (stored in any older spelling) include `secret`. */
export function isSecretTagged(tags: readonly string[]): boolean {
  return tags.some((t) => normalizeTag(t) === SECRET_TAG);
}

export interface CredentialMatch {
  /** What it looks like, e.g. "AWS access key id". */
  kind: string;
  /** Character offset of the match in the value. */
  index: number;
}

interface Detector {
  kind: string;
  re: RegExp;
  /** Extra check on the matched text (e.g. entropy of a generic value). */
  accept?: (m: RegExpExecArray) => boolean;
}

/** Shannon entropy in bits per character. */
export function entropy(s: string): number {
  if (s.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const c of counts.values()) {
    const p = c / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** A value that looks random rather than like words: long enough, mixed classes, high entropy. */
function looksRandom(v: string): boolean {
  if (v.length < 8) return false;
  if (
    /^(?:x+|\*+|\.+|<[^>]*>|\$\{[^}]*\}|\{\{[^}]*\}\}|%[a-z_]+%|changeme|password|secret|redacted|example|your[-_a-z]*|none|null|true|false)$/i.test(
      v,
    )
  )
    return false;
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^A-Za-z0-9]/].filter((r) => r.test(v)).length;
  return classes >= 2 && entropy(v) >= 3.0;
}

const DETECTORS: Detector[] = [
  { kind: 'AWS access key id', re: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g },
  { kind: 'AWS secret access key', re: /\baws_?secret_?access_?key\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}\b/gi },
  { kind: 'GitHub token', re: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b/g },
  { kind: 'GitHub fine-grained token', re: /\bgithub_pat_[A-Za-z0-9_]{22,255}\b/g },
  { kind: 'GitLab token', re: /\bgl(?:pat|dt|ptt|rt|soat|ft|cbt|imt|agent)-[A-Za-z0-9_-]{20,}\b/g },
  { kind: 'Slack token', re: /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g },
  { kind: 'Slack webhook', re: /https:\/\/hooks\.slack\.com\/services\/T[A-Za-z0-9_]+\/B[A-Za-z0-9_]+\/[A-Za-z0-9_]+/g },
  {
    kind: 'OpenAI API key',
    re: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}\b/g,
    accept: (m) => /[0-9]/.test(m[0]) && /[A-Za-z]/.test(m[0].slice(3)),
  },
  { kind: 'Anthropic API key', re: /\bsk-ant-[A-Za-z0-9_-]{20,}\b/g },
  { kind: 'Stripe key', re: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g },
  { kind: 'Google API key', re: /\bAIza[0-9A-Za-z_-]{35}\b/g },
  { kind: 'npm token', re: /\bnpm_[A-Za-z0-9]{36}\b/g },
  { kind: 'JSON Web Token', re: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g },
  { kind: 'private key', re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g },
  {
    kind: 'password or key assignment',
    // password=..., "api_key": "...", client-secret: ..., token = ... (a value with no spaces)
    re: /\b(?:pass(?:word|wd|phrase)?|pwd|secret|client[-_]?secret|api[-_]?key|access[-_]?key|auth[-_]?token|access[-_]?token|token|private[-_]?key)["']?\s*[:=]\s*["']?([^\s"',;]{8,})/gi,
    accept: (m) => looksRandom(m[1]),
  },
  { kind: 'credentials in a URL', re: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s:/@]{6,})@[^\s/]+/gi, accept: (m) => looksRandom(m[1]) },
];

/** Values longer than this are only scanned in their first part (values are at most 64 KiB anyway). */
const SCAN_CHARS = 65_536;

/** Credential-looking substrings of a value, at most one per kind, in the order of DETECTORS. */
export function detectCredentials(value: string): CredentialMatch[] {
  const text = value.length > SCAN_CHARS ? value.slice(0, SCAN_CHARS) : value;
  const out: CredentialMatch[] = [];
  for (const d of DETECTORS) {
    d.re.lastIndex = 0;
    for (let m = d.re.exec(text); m; m = d.re.exec(text)) {
      if (!d.accept || d.accept(m)) {
        out.push({ kind: d.kind, index: m.index });
        break;
      }
    }
  }
  return out;
}
