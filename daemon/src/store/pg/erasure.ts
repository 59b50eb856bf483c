/**
 * Erasure of team memory with a signed receipt (`memory/erase` on team
 * namespaces), so a right-to-erasure request on team data is answered with
 * proof, as the local store's erase (store/erase.ts) does for local data.
 *
 * The work is done by `cairn.erase()`, a SECURITY DEFINER function of the
 * schema owner (the migration below): it checks that the calling login role
 * administers every namespace it erases, removes the memories with their
 * history, links, rejected values and change-log rows (and, for a root, the
 * namespaces and every history row left in them), appends one `erase` history
 * row and change per memory, and signs the receipt with the team's key. The key
 * lives in `cairn.signing_key`, which members cannot read (no privilege, and
 * row-level security with no policy); no function signs anything a caller
 * hands it, so a receipt can only come from an erasure that happened. The
 * signature is HMAC-SHA256 (PostgreSQL has no public-key signatures without
 * extensions): whoever can reach the database verifies a receipt with
 * `cairn.verify_receipt()` (`cairn team verify-receipt`), without the key ever
 * leaving it.
 *
 * Canonical forms are PostgreSQL's jsonb text (keys ordered by jsonb, `", "` and
 * `": "` separators): the signature is over the receipt without `signature`, and
 * the content hash is sha256 over `[salt, [[id, namespace, key, value], ...]]`
 * (sorted by id) in that form (teamContentHash recomputes it).
 *
 * What it does not do: PostgreSQL keeps deleted row versions until VACUUM
 * reclaims them (autovacuum, or the owner's `VACUUM cairn.memories, ...`) and
 * its WAL until checkpoints recycle it; the receipt says so (`vacuumPending`).
 */
import { createHash } from 'node:crypto';
import { CairnError } from '../../protocol/errors';
import type { EraseParams, EraseResult, TeamErasureReceipt } from '../../protocol/types';
import { newSalt } from '../receipt';
import type { PgBackend } from './backend';
import { mapError } from './db';
import { Params, scopeSql } from './sql';

/** Schema migration (the signing key and the two functions); appended to schema.ts's MIGRATIONS. */
export const ERASURE_MIGRATION = `
  CREATE TABLE cairn.signing_key (
    id smallint PRIMARY KEY CHECK (id = 1), key_id text NOT NULL, secret bytea NOT NULL, created_at bigint NOT NULL);
  INSERT INTO cairn.signing_key VALUES (1,
    left(replace(gen_random_uuid()::text, '-', ''), 16),
    decode(replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', '')
        || replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', ''), 'hex'),
    (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
  REVOKE ALL ON cairn.signing_key FROM PUBLIC;

  CREATE FUNCTION cairn.hmac_sha256(k bytea, m bytea) RETURNS bytea LANGUAGE plpgsql IMMUTABLE STRICT AS $$
    DECLARE kb bytea; ipad bytea; opad bytea;
    BEGIN
      IF length(k) > 64 THEN k := sha256(k); END IF;
      kb := k || decode(repeat('00', 64 - length(k)), 'hex');
      ipad := kb; opad := kb;
      FOR i IN 0..63 LOOP
        ipad := set_byte(ipad, i, get_byte(kb, i) # 54);
        opad := set_byte(opad, i, get_byte(kb, i) # 92);
      END LOOP;
      RETURN sha256(opad || sha256(ipad || m));
    END $$;

  CREATE FUNCTION cairn.erase(p_ids text[], p_root text, p_target jsonb, p_reason text, p_salt text, p_on_behalf_of text)
    RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = cairn, pg_catalog, pg_temp AS $$
    DECLARE
      ids text[]; denied text; rid text := gen_random_uuid()::text;
      now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
      rows_j jsonb; mems_j jsonb; erased_j jsonb; n_vec int; n_hist int; n_links int; n_ns int := 0; pos bigint := 0;
      k record; r jsonb; m record;
      under text[];
    BEGIN
      IF p_root IS NOT NULL THEN
        IF NOT cairn.allowed(p_root, 3) THEN
          RAISE EXCEPTION 'erasing % needs admin on it', p_root USING ERRCODE = '42501';
        END IF;
        SELECT coalesce(array_agg(n.id), '{}') INTO under FROM namespaces n
          WHERE n.path = p_root OR left(n.path, length(p_root) + 1) = p_root || '.';
        SELECT coalesce(array_agg(m2.id), '{}') INTO ids FROM memories m2 WHERE m2.ns_id = ANY(under);
      ELSE
        ids := coalesce(p_ids, '{}');
      END IF;
      PERFORM 1 FROM memories WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
      SELECT min(n.path) INTO denied FROM memories m2 JOIN namespaces n ON n.id = m2.ns_id
        WHERE m2.id = ANY(ids) AND NOT cairn.allowed(n.path, 3);
      IF denied IS NOT NULL THEN
        RAISE EXCEPTION 'erasing memories in % needs admin on it', denied USING ERRCODE = '42501';
      END IF;
      SELECT coalesce(jsonb_agg(jsonb_build_array(m2.id, n.path, m2.key, m2.value) ORDER BY m2.id), '[]'::jsonb),
             coalesce(jsonb_agg(jsonb_build_object('id', m2.id, 'namespace', n.path) ORDER BY m2.id), '[]'::jsonb),
             coalesce(jsonb_agg(jsonb_build_object('id', m2.id, 'ns_id', m2.ns_id, 'path', n.path, 'version', m2.version) ORDER BY m2.id), '[]'::jsonb),
             count(*) FILTER (WHERE m2.embedding IS NOT NULL)
        INTO rows_j, mems_j, erased_j, n_vec
        FROM memories m2 JOIN namespaces n ON n.id = m2.ns_id WHERE m2.id = ANY(ids);

      -- (earlier erasures' own rows, which hold no content, stay: the audit keeps them)
      DELETE FROM history WHERE memory_id = ANY(ids) OR (p_root IS NOT NULL AND ns_id = ANY(under) AND op <> 'erase');
      GET DIAGNOSTICS n_hist = ROW_COUNT;
      DELETE FROM links WHERE src = ANY(ids) OR dst = ANY(ids);
      GET DIAGNOSTICS n_links = ROW_COUNT;
      DELETE FROM rejected_values WHERE memory_id = ANY(ids) OR (p_root IS NOT NULL AND ns_id = ANY(under));
      DELETE FROM changes WHERE memory_id = ANY(ids) OR (p_root IS NOT NULL AND ns_id = ANY(under) AND op <> 'erase');
      DELETE FROM memories WHERE id = ANY(ids);
      IF p_root IS NOT NULL THEN
        DELETE FROM namespaces WHERE id = ANY(under);
        GET DIAGNOSTICS n_ns = ROW_COUNT;
      END IF;
      -- Nothing of what was erased may remain (a trigger that copied it elsewhere would make the receipt a lie).
      IF EXISTS (SELECT 1 FROM history WHERE memory_id = ANY(ids)) OR EXISTS (SELECT 1 FROM memories WHERE id = ANY(ids)) THEN
        RAISE EXCEPTION 'erasure left rows of the erased memories behind' USING ERRCODE = 'XX000';
      END IF;

      FOR m IN SELECT * FROM jsonb_to_recordset(erased_j) AS x(id text, ns_id text, path text, version int) LOOP
        INSERT INTO history(memory_id, ns_id, op, actor, reason, at, version, previous, state, detail)
          VALUES (m.id, m.ns_id, 'erase', session_user, p_reason, now_ms, m.version + 1, NULL, NULL,
                  (jsonb_build_object('receipt', rid, 'namespace', m.path)
                    || CASE WHEN p_on_behalf_of IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('onBehalfOf', p_on_behalf_of) END)::text);
        INSERT INTO changes(memory_id, ns_id, ns_path, key, op, at) VALUES (m.id, m.ns_id, m.path, NULL, 'erase', now_ms)
          RETURNING position INTO pos;
      END LOOP;

      SELECT key_id, secret INTO k FROM signing_key WHERE id = 1;
      r := jsonb_build_object(
        'format', 'cairn-erasure-receipt', 'version', 1, 'store', 'team', 'id', rid,
        'erasedAt', to_char(to_timestamp(now_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'actor', session_user::text, 'reason', p_reason, 'target', p_target, 'memories', mems_j,
        'removed', jsonb_build_object('history', n_hist, 'links', n_links, 'vectors', n_vec, 'namespaces', n_ns),
        'contentHash', 'sha256:' || encode(sha256(convert_to(jsonb_build_array(p_salt, rows_j)::text, 'UTF8')), 'hex'),
        'salt', p_salt, 'vacuumPending', true, 'database', current_database(), 'keyId', k.key_id, 'algorithm', 'hmac-sha256');
      r := r || jsonb_build_object('signature', encode(cairn.hmac_sha256(k.secret, convert_to(r::text, 'UTF8')), 'hex'));
      RETURN jsonb_build_object('erased', jsonb_array_length(mems_j), 'position', pos, 'receipt', r);
    END $$;

  CREATE FUNCTION cairn.verify_receipt(r jsonb) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = cairn, pg_catalog, pg_temp AS $$
      SELECT coalesce((SELECT r->>'keyId' = k.key_id
          AND r->>'signature' = encode(cairn.hmac_sha256(k.secret, convert_to((r - 'signature')::text, 'UTF8')), 'hex')
        FROM cairn.signing_key k WHERE k.id = 1), false)
    $$;
`;

/** PostgreSQL's jsonb text of an array of strings and arrays of strings (what cairn.erase() hashes). */
function jsonbText(v: unknown): string {
  return Array.isArray(v) ? `[${v.map(jsonbText).join(', ')}]` : JSON.stringify(v);
}

/** The receipt's contentHash recomputed from the erased memories (whoever holds them and the receipt's salt). */
export function teamContentHash(salt: string, items: { id: string; namespace: string; key: string; value: string }[]): string {
  const rows = [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((m) => [m.id, m.namespace, m.key, m.value]);
  return (
    'sha256:' +
    createHash('sha256')
      .update(jsonbText([salt, rows]))
      .digest('hex')
  );
}

/** memory/erase on team memory: one memory (id, or namespace and key) or a subtree (root), by an admin of it. */
export async function teamErase(b: PgBackend, p: EraseParams): Promise<EraseResult> {
  const q = new Params();
  let ids: string[] | null = null;
  let target: Record<string, string>;
  try {
    if (p.root !== undefined) {
      target = { root: p.root };
      const where = [`(n.path = ${q.p(p.root)} OR left(n.path, ${q.p(p.root.length + 1)}) = ${q.p(p.root + '.')})`];
      const s = scopeSql(q, p.scope);
      if (s) where.push(s);
      const seen = await b.pool.query(`SELECT 1 FROM namespaces n WHERE ${where.join(' AND ')} LIMIT 1`, q.values);
      if (seen.rowCount === 0) throw new CairnError('NotFound', `no namespace ${p.root}${p.scope ? ' in scope' : ''}`, { field: 'root' });
    } else {
      const where: string[] = [];
      if (p.id !== undefined) {
        target = { id: p.id };
        where.push(`m.id = ${q.p(p.id)}`);
      } else {
        if (p.namespace === undefined || p.key === undefined)
          throw new CairnError('InvalidParams', 'id, namespace+key or root is required', { field: 'id' });
        target = { namespace: p.namespace, key: p.key };
        where.push(`n.path = ${q.p(p.namespace)} AND m.key = ${q.p(p.key)}`);
      }
      const s = scopeSql(q, p.scope);
      if (s) where.push(s);
      const r = await b.pool.query(
        `SELECT m.id FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where.join(' AND ')}`,
        q.values,
      );
      if (r.rowCount === 0)
        throw new CairnError('NotFound', `no memory ${p.id ?? `${p.namespace}/${p.key}`}${p.scope ? ' in scope' : ''}`, {
          field: p.id !== undefined ? 'id' : 'key',
        });
      ids = r.rows.map((x: { id: string }) => x.id);
    }
    const claimed = p.actor !== undefined && p.actor !== b.user ? p.actor : null;
    const r = await b.pool.query(`SELECT cairn.erase($1::text[], $2, $3::jsonb, $4, $5, $6) AS r`, [
      ids,
      p.root ?? null,
      JSON.stringify(target),
      p.reason ?? null,
      newSalt(),
      claimed,
    ]);
    const out = r.rows[0].r as { erased: number; position: number; receipt: TeamErasureReceipt };
    return { erased: out.erased, position: Number(out.position), receipt: out.receipt };
  } catch (e) {
    throw mapError(e);
  }
}

/** Ask the team database whether it signed this receipt (cairn.verify_receipt; the key never leaves it). */
export async function verifyTeamReceipt(b: PgBackend, receipt: unknown): Promise<boolean> {
  try {
    const r = await b.pool.query(`SELECT cairn.verify_receipt($1::jsonb) AS ok`, [JSON.stringify(receipt)]);
    return r.rows[0].ok === true;
  } catch (e) {
    throw mapError(e);
  }
}
