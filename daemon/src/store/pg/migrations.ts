/**
 * The team schema's numbered migrations (schema.ts `migrate` runs them in order under an advisory lock): migration
 * N is MIGRATIONS[N - 1], and PG_SCHEMA_VERSION is how many there are.
 */
import { ERASURE_MIGRATION } from './erasure';
import { GRANT_CHECKS_PLPGSQL_MIGRATION, GRANT_SETS_MIGRATION } from './grant-sets';
import { TEXT_MATCHES_MIGRATION, TEXT_MATCHES_RANKED_MIGRATION } from './text-matches';
import { indexBuildMarkerSql } from './index-builds';
import { HNSW_DIMS, SCOPE_VECTOR_DIMS } from './vector-index';

/** Migrations 6 and 8: the HNSW index of every common dimension, asked for with these build options. */
function hnswMarkers(efConstruction: number): string {
  return HNSW_DIMS.map((dim) => indexBuildMarkerSql({ kind: 'hnsw', dim, efConstruction })).join('\n');
}

export const MIGRATIONS: string[] = [
  // 1: everything
  `
  CREATE TABLE cairn.meta (key text PRIMARY KEY, value text NOT NULL);
  CREATE TABLE cairn.grants (
    root text NOT NULL, role name NOT NULL, level smallint NOT NULL CHECK (level BETWEEN 1 AND 3),
    PRIMARY KEY (root, role));
  CREATE TABLE cairn.namespaces (
    id text PRIMARY KEY, path text NOT NULL, created_at bigint NOT NULL,
    deleted_at bigint, deleted_by text, delete_reason text);
  CREATE UNIQUE INDEX cairn_race_ns_path ON cairn.namespaces(path) WHERE deleted_at IS NULL;
  CREATE TABLE cairn.memories (
    rowid bigserial UNIQUE, id text PRIMARY KEY, ns_id text NOT NULL REFERENCES cairn.namespaces(id),
    key text NOT NULL, value text NOT NULL, value_hash text NOT NULL, summary text,
    kind text NOT NULL, tags text NOT NULL, importance double precision NOT NULL, confidence double precision NOT NULL,
    source text NOT NULL, properties text NOT NULL, anchors text NOT NULL,
    created_at bigint NOT NULL, updated_at bigint NOT NULL, valid_from bigint, valid_to bigint, expires_at bigint,
    last_accessed_at bigint, access_count integer NOT NULL DEFAULT 0, version integer NOT NULL,
    status text NOT NULL, superseded_by text, deleted_at bigint, deleted_by text, delete_reason text,
    fts tsvector NOT NULL, embedding vector, embed_model text, embed_hash text,
    CONSTRAINT cairn_race_memory_key UNIQUE (ns_id, key));
  CREATE INDEX memories_fts ON cairn.memories USING gin (fts);
  CREATE INDEX memories_updated ON cairn.memories(updated_at DESC, rowid DESC);
  CREATE INDEX memories_expiry ON cairn.memories(expires_at) WHERE deleted_at IS NULL AND expires_at IS NOT NULL;
  CREATE INDEX memories_embed_model ON cairn.memories(embed_model);
  CREATE TABLE cairn.history (
    seq bigserial PRIMARY KEY, memory_id text NOT NULL, ns_id text NOT NULL, op text NOT NULL, actor text NOT NULL,
    reason text, at bigint NOT NULL, version integer NOT NULL, previous text, state text, detail text);
  CREATE INDEX history_memory ON cairn.history(memory_id, seq DESC);
  CREATE TABLE cairn.links (
    src text NOT NULL, dst text NOT NULL, type text NOT NULL, ns_id text NOT NULL, created_at bigint NOT NULL, actor text NOT NULL,
    PRIMARY KEY (src, dst, type));
  CREATE INDEX links_dst ON cairn.links(dst);
  CREATE TABLE cairn.rejected_values (
    ns_id text NOT NULL, value_hash text NOT NULL, memory_id text, actor text NOT NULL, at bigint NOT NULL,
    PRIMARY KEY (ns_id, value_hash));
  CREATE TABLE cairn.changes (
    position bigserial PRIMARY KEY, memory_id text, ns_id text, ns_path text, key text, op text NOT NULL, at bigint NOT NULL);

  CREATE FUNCTION cairn.allowed(p text, lvl int) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
      SELECT EXISTS (SELECT 1 FROM cairn.grants g
        WHERE g.level >= lvl AND (p = g.root OR left(p, length(g.root) + 1) = g.root || '.')
          AND pg_has_role(session_user, g.role, 'MEMBER'))
    $$;
  CREATE FUNCTION cairn.ns_ids(lvl int) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
      SELECT n.id FROM cairn.namespaces n WHERE cairn.allowed(n.path, lvl)
    $$;
  CREATE FUNCTION cairn.check_actor() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.actor <> session_user AND NEW.actor NOT LIKE 'system:%' THEN
        RAISE EXCEPTION 'history actor must be the database user % (got %)', session_user, NEW.actor USING ERRCODE = '42501';
      END IF;
      RETURN NEW;
    END $$;
  CREATE TRIGGER history_actor BEFORE INSERT ON cairn.history FOR EACH ROW EXECUTE FUNCTION cairn.check_actor();
  CREATE FUNCTION cairn.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- Only the position: every listener reads the change row itself, through row-level security,
      -- so a role never learns names in roots it was not granted.
      PERFORM pg_notify('cairn_changes', NEW.position::text);
      RETURN NEW;
    END $$;
  CREATE TRIGGER changes_notify AFTER INSERT ON cairn.changes FOR EACH ROW EXECUTE FUNCTION cairn.notify_change();

  CREATE POLICY ns_read ON cairn.namespaces FOR SELECT USING (cairn.allowed(path, 1));
  CREATE POLICY ns_insert ON cairn.namespaces FOR INSERT WITH CHECK (cairn.allowed(path, 2));
  CREATE POLICY ns_admin ON cairn.namespaces FOR UPDATE USING (cairn.allowed(path, 3)) WITH CHECK (cairn.allowed(path, 3));
  CREATE POLICY m_read ON cairn.memories FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY m_insert ON cairn.memories FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY m_update ON cairn.memories FOR UPDATE USING (ns_id IN (SELECT cairn.ns_ids(1))) WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY m_purge ON cairn.memories FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(3)));
  CREATE POLICY h_read ON cairn.history FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY h_insert ON cairn.history FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY h_purge ON cairn.history FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(3)));
  CREATE POLICY l_read ON cairn.links FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY l_insert ON cairn.links FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY l_delete ON cairn.links FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY r_read ON cairn.rejected_values FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY r_insert ON cairn.rejected_values FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY r_update ON cairn.rejected_values FOR UPDATE USING (ns_id IN (SELECT cairn.ns_ids(2))) WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY r_delete ON cairn.rejected_values FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY c_read ON cairn.changes FOR SELECT USING (ns_id IS NULL OR ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY c_insert ON cairn.changes FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY meta_read ON cairn.meta FOR SELECT USING (true);
  CREATE POLICY grants_own ON cairn.grants FOR SELECT USING (pg_has_role(session_user, role, 'MEMBER'));
  `,
  // 2: history cap. meta 'history_cap' (set by the schema owner: `cairn team history-cap N|off`) keeps at most N
  // history rows per memory; a trigger trims after every insert, as the owner, so every writer's daemon obeys it
  // whatever its grants (members may not delete history themselves).
  `
  CREATE FUNCTION cairn.cap_history() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
    DECLARE cap int;
    BEGIN
      SELECT value::int INTO cap FROM cairn.meta WHERE key = 'history_cap';
      IF cap IS NOT NULL THEN
        DELETE FROM cairn.history h WHERE h.memory_id = NEW.memory_id
          AND h.seq < (SELECT min(seq) FROM (SELECT seq FROM cairn.history WHERE memory_id = NEW.memory_id ORDER BY seq DESC LIMIT cap) keep);
      END IF;
      RETURN NULL;
    END $$;
  CREATE TRIGGER history_cap AFTER INSERT ON cairn.history FOR EACH ROW EXECUTE FUNCTION cairn.cap_history();
  `,
  // 3: idempotency keys (docs/protocol.md#idempotency), as in the SQLite store: key -> recorded result, written in the
  // write's own transaction. Keys belong to the login role that sent them (row-level security: a role sees and
  // replays only its own). A purged memory's records are blanked by trigger, as the owner (whatever role purged it):
  // they hold its text; the key stays taken, so a retry with it is refused instead of writing the memory again.
  `
  CREATE TABLE cairn.idempotency_keys (
    role name NOT NULL DEFAULT session_user, key text NOT NULL, method text NOT NULL, fingerprint text NOT NULL,
    result text NOT NULL, memory_id text, at bigint NOT NULL, PRIMARY KEY (role, key));
  CREATE INDEX idempotency_keys_at ON cairn.idempotency_keys(role, at);
  CREATE INDEX idempotency_keys_memory ON cairn.idempotency_keys(memory_id);
  CREATE POLICY idem_own ON cairn.idempotency_keys FOR ALL USING (role = session_user) WITH CHECK (role = session_user);
  CREATE FUNCTION cairn.blank_idempotency() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
    BEGIN
      UPDATE cairn.idempotency_keys SET result = '{"erased":true}', fingerprint = 'erased', memory_id = NULL
        WHERE memory_id = OLD.id;
      RETURN NULL;
    END $$;
  CREATE TRIGGER memories_blank_idempotency AFTER DELETE ON cairn.memories FOR EACH ROW EXECUTE FUNCTION cairn.blank_idempotency();
  `,
  // 4: the row-level-security contract, closed (issue 23; the matrix is test/team/rls-matrix.test.ts and ARCHITECTURE.md).
  //  - Every policy requires the level the operation needs on the old row (USING) and on the new row (WITH CHECK):
  //    an UPDATE of a memory needs write on the namespace it is in, not read; a memory's id and namespace never change.
  //  - History and change rows are written only by the SECURITY DEFINER functions below, which derive the namespace,
  //    path, key, version and new state from the memory row itself and check the caller's level on it; members keep
  //    only SELECT on cairn.history and cairn.changes (assertGrants). Purge and expiry are such functions too.
  //  - A member changes a memory only by a new version whose history row exists at commit (check_memory,
  //    check_versioned); only access statistics and vectors change in place.
  //  - The database user (session_user) is always the recorded actor; a claimed actor is kept as detail.onBehalfOf.
  //    `system:` actors are written only by server-side code (check_actor: current_user is the schema owner, i.e.
  //    inside a SECURITY DEFINER function), never from a client's claim.
  `
  ALTER FUNCTION cairn.allowed(text, int) SET search_path = pg_catalog, cairn, pg_temp;
  ALTER FUNCTION cairn.ns_ids(int) SET search_path = pg_catalog, cairn, pg_temp;
  ALTER FUNCTION cairn.cap_history() SET search_path = pg_catalog, cairn, pg_temp;
  ALTER FUNCTION cairn.blank_idempotency() SET search_path = pg_catalog, cairn, pg_temp;

  -- True inside the store's own server-side code: its SECURITY DEFINER functions run as their owner (who ran cairn team init).
  -- (plpgsql, as the small functions below that run once per row: their plans are cached; a LANGUAGE sql function
  -- that is not inlined is planned again on every call.)
  CREATE FUNCTION cairn.is_server_side() RETURNS boolean LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    BEGIN
      RETURN current_user = (SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE oid = 'cairn.is_server_side()'::regprocedure);
    END $$;
  CREATE OR REPLACE FUNCTION cairn.check_actor() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.actor IS NOT DISTINCT FROM OLD.actor THEN
        RETURN NEW;
      END IF;
      IF NEW.actor IS DISTINCT FROM session_user::text THEN
        IF NOT (NEW.actor LIKE 'system:%' AND cairn.is_server_side()) THEN
          RAISE EXCEPTION 'the actor must be the database user % (got %)', session_user, NEW.actor USING ERRCODE = '42501';
        END IF;
      END IF;
      RETURN NEW;
    END $$;
  CREATE TRIGGER links_actor BEFORE INSERT OR UPDATE ON cairn.links FOR EACH ROW EXECUTE FUNCTION cairn.check_actor();
  CREATE TRIGGER rejected_actor BEFORE INSERT OR UPDATE ON cairn.rejected_values FOR EACH ROW EXECUTE FUNCTION cairn.check_actor();
  -- A memory never moves (its history and links are its namespace's) and deleted_by names the database user.
  CREATE FUNCTION cairn.check_memory() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE bad text;
    BEGIN
      IF TG_OP = 'UPDATE' AND (NEW.id IS DISTINCT FROM OLD.id OR NEW.ns_id IS DISTINCT FROM OLD.ns_id OR NEW.rowid IS DISTINCT FROM OLD.rowid) THEN
        RAISE EXCEPTION 'a memory''s id and namespace never change' USING ERRCODE = '42501';
      END IF;
      IF NEW.deleted_by IS NOT NULL AND NEW.deleted_by IS DISTINCT FROM session_user::text
         AND (TG_OP = 'INSERT' OR NEW.deleted_by IS DISTINCT FROM OLD.deleted_by) THEN
        IF NOT (NEW.deleted_by LIKE 'system:%' AND cairn.is_server_side()) THEN
          RAISE EXCEPTION 'deleted_by must be the database user % (got %)', session_user, NEW.deleted_by USING ERRCODE = '42501';
        END IF;
      END IF;
      -- Every change is a new version (then memories_versioned wants its history at commit); only the access
      -- statistics and the vector change in place. (The owner and the server-side functions are trusted.)
      IF TG_OP = 'INSERT' AND NEW.version <> 1 THEN
        bad := 'a new memory has version 1';
      ELSIF TG_OP = 'UPDATE' AND NEW.version <> OLD.version AND NEW.version <> OLD.version + 1 THEN
        bad := 'a memory''s version goes up by one';
      ELSIF TG_OP = 'UPDATE' AND NEW.version = OLD.version AND (NEW.key, NEW.value, NEW.value_hash, NEW.summary, NEW.kind, NEW.tags,
          NEW.importance, NEW.confidence, NEW.source, NEW.properties, NEW.anchors, NEW.created_at, NEW.updated_at, NEW.valid_from,
          NEW.valid_to, NEW.expires_at, NEW.status, NEW.superseded_by, NEW.deleted_at, NEW.deleted_by, NEW.delete_reason, NEW.fts)
        IS DISTINCT FROM (OLD.key, OLD.value, OLD.value_hash, OLD.summary, OLD.kind, OLD.tags, OLD.importance, OLD.confidence,
          OLD.source, OLD.properties, OLD.anchors, OLD.created_at, OLD.updated_at, OLD.valid_from, OLD.valid_to, OLD.expires_at,
          OLD.status, OLD.superseded_by, OLD.deleted_at, OLD.deleted_by, OLD.delete_reason, OLD.fts) THEN
        bad := 'a change to a memory is a new version (with its history)';
      END IF;
      IF bad IS NOT NULL AND NOT cairn.is_server_side() THEN
        RAISE EXCEPTION '%', bad USING ERRCODE = '42501';
      END IF;
      RETURN NEW;
    END $$;
  CREATE TRIGGER memories_check BEFORE INSERT OR UPDATE ON cairn.memories FOR EACH ROW EXECUTE FUNCTION cairn.check_memory();
  -- At commit, a member's new version of a memory (still current) has its history row, which only record_write and the
  -- other server-side functions write: nothing changes silently, whatever SQL a member sends.
  -- (SECURITY DEFINER: it reads without row-level security; the owner's and superusers' own sessions are trusted.)
  CREATE FUNCTION cairn.check_versioned() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM cairn.memories WHERE id = NEW.id AND version = NEW.version)
         AND NOT EXISTS (SELECT 1 FROM cairn.history WHERE memory_id = NEW.id AND version = NEW.version)
         AND session_user <> current_user AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user) THEN
        RAISE EXCEPTION 'memory % version % has no history: changes go through cairn.record_write', NEW.id, NEW.version USING ERRCODE = '42501';
      END IF;
      RETURN NULL;
    END $$;
  CREATE CONSTRAINT TRIGGER memories_versioned AFTER INSERT ON cairn.memories DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION cairn.check_versioned();
  CREATE CONSTRAINT TRIGGER memories_versioned_update AFTER UPDATE ON cairn.memories DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.version IS DISTINCT FROM OLD.version) EXECUTE FUNCTION cairn.check_versioned();
  CREATE FUNCTION cairn.check_namespace() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id THEN
        RAISE EXCEPTION 'a namespace''s id never changes' USING ERRCODE = '42501';
      END IF;
      IF NEW.deleted_by IS NOT NULL AND NEW.deleted_by IS DISTINCT FROM session_user::text
         AND (TG_OP = 'INSERT' OR NEW.deleted_by IS DISTINCT FROM OLD.deleted_by) AND NOT cairn.is_server_side() THEN
        RAISE EXCEPTION 'deleted_by must be the database user % (got %)', session_user, NEW.deleted_by USING ERRCODE = '42501';
      END IF;
      RETURN NEW;
    END $$;
  CREATE TRIGGER namespaces_check BEFORE INSERT OR UPDATE ON cairn.namespaces FOR EACH ROW EXECUTE FUNCTION cairn.check_namespace();

  DROP POLICY m_update ON cairn.memories;
  DROP POLICY m_purge ON cairn.memories;
  DROP POLICY h_insert ON cairn.history;
  DROP POLICY h_purge ON cairn.history;
  DROP POLICY c_insert ON cairn.changes;
  DROP POLICY l_insert ON cairn.links;
  DROP POLICY r_insert ON cairn.rejected_values;
  DROP POLICY r_update ON cairn.rejected_values;
  CREATE POLICY m_update ON cairn.memories FOR UPDATE USING (ns_id IN (SELECT cairn.ns_ids(2))) WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  -- A link belongs to its source memory's namespace (written there), and both ends must be memories the role reads.
  CREATE POLICY l_insert ON cairn.links FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2))
    AND ns_id = (SELECT m.ns_id FROM cairn.memories m WHERE m.id = src) AND EXISTS (SELECT 1 FROM cairn.memories m WHERE m.id = dst));
  -- A rejected value names (if anything) a memory of its own namespace.
  CREATE POLICY r_insert ON cairn.rejected_values FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2))
    AND (memory_id IS NULL OR ns_id = (SELECT m.ns_id FROM cairn.memories m WHERE m.id = memory_id)));
  CREATE POLICY r_update ON cairn.rejected_values FOR UPDATE USING (ns_id IN (SELECT cairn.ns_ids(2))) WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2))
    AND (memory_id IS NULL OR ns_id = (SELECT m.ns_id FROM cairn.memories m WHERE m.id = memory_id)));

  -- A memory as the protocol's Memory object (rows.ts toMemory), for history states written server-side.
  -- (iso is inlined where it is used: STABLE as to_char, no SET clause, names qualified.)
  CREATE FUNCTION cairn.iso(ms bigint) RETURNS text LANGUAGE sql STABLE AS $$
      SELECT pg_catalog.to_char(timestamp '1970-01-01' + ms * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    $$;
  CREATE FUNCTION cairn.memory_json(m cairn.memories, path text) RETURNS text LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    BEGIN
      RETURN json_build_object('id', m.id, 'namespace', path, 'key', m.key, 'value', m.value, 'summary', m.summary, 'kind', m.kind,
        'tags', m.tags::json, 'importance', m.importance, 'confidence', m.confidence, 'source', m.source,
        'properties', m.properties::json, 'anchors', m.anchors::json, 'createdAt', cairn.iso(m.created_at),
        'updatedAt', cairn.iso(m.updated_at), 'validFrom', cairn.iso(m.valid_from), 'validTo', cairn.iso(m.valid_to),
        'expiresAt', cairn.iso(m.expires_at), 'lastAccessedAt', cairn.iso(m.last_accessed_at), 'accessCount', m.access_count,
        'version', m.version, 'status', m.status, 'supersededBy', m.superseded_by, 'deletedAt', cairn.iso(m.deleted_at),
        'deletedBy', m.deleted_by)::text;
    END $$;
  CREATE FUNCTION cairn.now_ms() RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

  -- The history and change-log rows of a write the caller just made to memory p_id (create, update, delete, forget,
  -- restore, supersede): namespace, path, key, version, time and new state come from the row; the caller must be
  -- allowed to write its namespace, the row must be in the state the op leaves, and that version must not have a
  -- history row yet (so nobody records a change that did not happen, twice, or in another namespace). Returns the
  -- change-log position.
  CREATE FUNCTION cairn.record_write(p_id text, p_op text, p_reason text, p_claimed text, p_previous text, p_detail text)
    RETURNS bigint LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE m cairn.memories; path text; pos bigint; prev jsonb := p_previous::jsonb;
    BEGIN
      SELECT * INTO m FROM cairn.memories WHERE id = p_id;
      SELECT n.path INTO path FROM cairn.namespaces n WHERE n.id = m.ns_id;
      IF m.id IS NULL OR NOT cairn.allowed(path, 2) THEN
        RAISE EXCEPTION 'no memory % this role may write', p_id USING ERRCODE = '42501';
      END IF;
      IF NOT (CASE p_op
          WHEN 'create' THEN m.deleted_at IS NULL AND m.version = 1 AND prev IS NULL
          WHEN 'update' THEN m.deleted_at IS NULL
          WHEN 'restore' THEN m.deleted_at IS NULL
          WHEN 'delete' THEN m.deleted_at IS NOT NULL
          WHEN 'forget' THEN m.deleted_at IS NOT NULL
          WHEN 'supersede' THEN m.status = 'superseded'
          ELSE false END)
        OR (p_op <> 'create' AND (prev IS NULL OR prev->>'id' IS DISTINCT FROM m.id OR (prev->>'version')::int IS DISTINCT FROM m.version - 1))
        OR EXISTS (SELECT 1 FROM cairn.history h WHERE h.memory_id = m.id AND h.version = m.version) THEN
        RAISE EXCEPTION 'history % of memory % version % does not match the stored memory', p_op, p_id, m.version USING ERRCODE = '42501';
      END IF;
      INSERT INTO cairn.history(memory_id, ns_id, op, actor, reason, at, version, previous, state, detail)
        VALUES (m.id, m.ns_id, p_op, session_user, p_reason, m.updated_at, m.version, p_previous, cairn.memory_json(m, path),
                -- the caller's detail plus the claimed actor when it is not the database user
                NULLIF((COALESCE(p_detail::jsonb, '{}'::jsonb) || CASE WHEN p_claimed IS NOT NULL AND p_claimed <> session_user::text
                  THEN jsonb_build_object('onBehalfOf', p_claimed) ELSE '{}'::jsonb END)::text, '{}'));
      INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES (m.id, m.ns_id, path, m.key, p_op, m.updated_at)
        RETURNING position INTO pos;
      RETURN pos;
    END $$;
  -- A change-log row without history (forgetting a forgotten memory again, link, unlink) for a memory the caller may write.
  CREATE FUNCTION cairn.record_change(p_id text, p_op text) RETURNS bigint LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE m cairn.memories; path text; pos bigint;
    BEGIN
      SELECT * INTO m FROM cairn.memories WHERE id = p_id;
      SELECT n.path INTO path FROM cairn.namespaces n WHERE n.id = m.ns_id;
      IF m.id IS NULL OR NOT cairn.allowed(path, 2) OR p_op NOT IN ('forget', 'link', 'unlink') OR (p_op = 'forget' AND m.deleted_at IS NULL) THEN
        RAISE EXCEPTION 'no % change for memory % by this role', p_op, p_id USING ERRCODE = '42501';
      END IF;
      INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES (m.id, m.ns_id, path, m.key, p_op, cairn.now_ms())
        RETURNING position INTO pos;
      RETURN pos;
    END $$;
  -- The change-log row of a namespace renamed to, or deleted at, p_path (namespace p_ns_id is it or lies under it).
  CREATE FUNCTION cairn.record_namespace_change(p_ns_id text, p_path text, p_op text) RETURNS bigint LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE n cairn.namespaces; pos bigint;
    BEGIN
      SELECT * INTO n FROM cairn.namespaces WHERE id = p_ns_id;
      IF n.id IS NULL OR NOT cairn.allowed(p_path, 3) OR NOT (n.path = p_path OR left(n.path, length(p_path) + 1) = p_path || '.')
         OR NOT (CASE p_op WHEN 'namespace_delete' THEN n.deleted_at IS NOT NULL WHEN 'namespace_rename' THEN n.deleted_at IS NULL ELSE false END) THEN
        RAISE EXCEPTION 'no % change for namespace % by this role', p_op, p_path USING ERRCODE = '42501';
      END IF;
      INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES (NULL, n.id, p_path, NULL, p_op, cairn.now_ms())
        RETURNING position INTO pos;
      RETURN pos;
    END $$;
  -- Purging, only from the server-side functions below: the row, its links and history go; one purge history row
  -- (actor p_actor, checked by check_actor) and a change-log row remain. Not callable by members (no privileges).
  CREATE FUNCTION cairn.purge_row(m cairn.memories, path text, p_actor text, p_reason text, p_detail text, p_at bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE pos bigint;
    BEGIN
      IF NOT cairn.is_server_side() THEN RAISE EXCEPTION 'purge_row is internal' USING ERRCODE = '42501'; END IF;
      DELETE FROM cairn.memories WHERE id = m.id;
      DELETE FROM cairn.links WHERE src = m.id OR dst = m.id;
      DELETE FROM cairn.history WHERE memory_id = m.id;
      UPDATE cairn.rejected_values SET memory_id = NULL WHERE memory_id = m.id;
      INSERT INTO cairn.history(memory_id, ns_id, op, actor, reason, at, version, previous, state, detail)
        VALUES (m.id, m.ns_id, 'purge', p_actor, p_reason, p_at, m.version + 1, NULL, NULL,
                (COALESCE(p_detail::jsonb, '{}'::jsonb) || jsonb_build_object('namespace', path, 'key', m.key))::text);
      INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES (m.id, m.ns_id, path, m.key, 'purge', p_at)
        RETURNING position INTO pos;
      RETURN pos;
    END $$;
  -- memory/purge: an admin of its namespace removes a deleted memory (or one in a deleted namespace) for good.
  CREATE FUNCTION cairn.purge_memory(p_id text, p_reason text, p_claimed text, p_at bigint) RETURNS bigint LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE m cairn.memories; n cairn.namespaces;
    BEGIN
      SELECT * INTO m FROM cairn.memories WHERE id = p_id FOR UPDATE;
      SELECT * INTO n FROM cairn.namespaces WHERE id = m.ns_id;
      IF m.id IS NULL OR NOT cairn.allowed(n.path, 3) THEN
        RAISE EXCEPTION 'purging needs admin on the memory''s namespace' USING ERRCODE = '42501';
      END IF;
      IF m.deleted_at IS NULL AND n.deleted_at IS NULL THEN
        RAISE EXCEPTION 'memory % is live; delete it before purging', p_id USING ERRCODE = '55000';
      END IF;
      RETURN cairn.purge_row(m, n.path, session_user, p_reason,
        CASE WHEN p_claimed IS NOT NULL AND p_claimed <> session_user::text THEN jsonb_build_object('onBehalfOf', p_claimed)::text END, p_at);
    END $$;
  -- The sweep's server-side jobs, over the namespaces the caller may write (expiry) or administer (purge of
  -- deleted namespaces): the only writers of system: actors. Each records the caller as detail.sweptBy.
  CREATE FUNCTION cairn.expire_due(p_now bigint, p_limit int) RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE r record; m cairn.memories; path text; prev text; done int := 0;
    BEGIN
      FOR r IN SELECT x.id, n.path FROM cairn.memories x JOIN cairn.namespaces n ON n.id = x.ns_id
          WHERE x.deleted_at IS NULL AND x.expires_at IS NOT NULL AND x.expires_at <= p_now AND n.deleted_at IS NULL AND cairn.allowed(n.path, 2)
          ORDER BY x.expires_at LIMIT p_limit FOR UPDATE OF x SKIP LOCKED LOOP
        SELECT * INTO m FROM cairn.memories WHERE id = r.id;
        path := r.path;
        prev := cairn.memory_json(m, path);
        UPDATE cairn.memories SET deleted_at = p_now, deleted_by = 'system:expire', delete_reason = 'expired', version = version + 1, updated_at = p_now
          WHERE id = m.id RETURNING * INTO m;
        INSERT INTO cairn.history(memory_id, ns_id, op, actor, reason, at, version, previous, state, detail)
          VALUES (m.id, m.ns_id, 'expire', 'system:expire', 'expired', p_now, m.version, prev, cairn.memory_json(m, path),
                  jsonb_build_object('sweptBy', session_user)::text);
        INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES (m.id, m.ns_id, path, m.key, 'expire', p_now);
        done := done + 1;
      END LOOP;
      RETURN done;
    END $$;
  CREATE FUNCTION cairn.purge_deleted_namespaces(p_at bigint, p_limit int) RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, cairn, pg_temp AS $$
    DECLARE r record; m cairn.memories; done int := 0;
    BEGIN
      FOR r IN SELECT x.id, n.path FROM cairn.memories x JOIN cairn.namespaces n ON n.id = x.ns_id
          WHERE n.deleted_at IS NOT NULL AND cairn.allowed(n.path, 3) LIMIT p_limit FOR UPDATE OF x SKIP LOCKED LOOP
        SELECT * INTO m FROM cairn.memories WHERE id = r.id;
        PERFORM cairn.purge_row(m, r.path, 'system:namespace-delete', 'namespace deleted', jsonb_build_object('sweptBy', session_user)::text, p_at);
        done := done + 1;
      END LOOP;
      RETURN done;
    END $$;
  `,
  // 5: erasure with signed receipts (store/pg/erasure.ts): the team's signing key, readable by the owner only, and the
  // SECURITY DEFINER functions cairn.erase() and cairn.verify_receipt().
  ERASURE_MIGRATION,
  // 6: the approximate vector index (store/pg/vector-index.ts): HNSW per common dimension (ef_construction 128; asked
  // for here, built by index-builds.ts with CREATE INDEX CONCURRENTLY after the commit, so writes go on meanwhile); and,
  // where the server's pgvector has iterative index scans (0.8+), filtered scans that keep walking until k rows (needs
  // the database owner).
  `${hnswMarkers(128)}
  DO $$ BEGIN
    IF (SELECT string_to_array(extversion, '.')::int[] >= '{0,8}' FROM pg_extension WHERE extname = 'vector') THEN
      EXECUTE format('ALTER DATABASE %I SET hnsw.iterative_scan = relaxed_order', current_database());
    END IF;
  EXCEPTION WHEN insufficient_privilege THEN NULL;
  END $$;
  `,
  // 7: cairn.ns_ids as one set-based query instead of a SECURITY DEFINER call per namespace (store/pg/grant-sets.ts).
  GRANT_SETS_MIGRATION,
  // 8: the HNSW indexes rebuilt with ef_construction = 256 (store/pg/vector-index.ts: recall@10 >= 0.95 with
  // hnsw.ef_search = 800 on the benchmark's queries, where 128 gave 0.81 at most). Asked for, like 6: built next to the
  // old index without blocking writes, then swapped in (index-builds.ts). (Until schema v9 this migration dropped and
  // rebuilt the indexes in its transaction, and writes waited for the whole build.)
  hnswMarkers(256),
  // 9: cairn.text_matches, the full-text arm's candidates from the GIN index under the policies' read rules
  // (store/pg/text-matches.ts: under row-level security the planner never uses the index for `@@`).
  TEXT_MATCHES_MIGRATION,
  // 10: cairn.ns_ids and cairn.allowed in plpgsql (planned once per session instead of in every statement that calls
  // them; store/pg/grant-sets.ts), same predicates.
  GRANT_CHECKS_PLPGSQL_MIGRATION,
  // 11: the scope-vector indexes (store/pg/vector-index.ts): a narrow scope's exact vector search as an index-only
  // scan of its namespaces' entries instead of a table page per memory. Asked for, built after the commit (index-builds.ts).
  // And statistics of the vectors' dimension: without them the planner takes `vector_dims(embedding) = d` (in both
  // vector passes, and the indexes' predicates) for a 0.5% match, and at 1M it chose the scope-vector index, all of it,
  // over the HNSW index for a whole-team search (936 ms instead of 88).
  `${SCOPE_VECTOR_DIMS.map((dim) => indexBuildMarkerSql({ kind: 'scope-vectors', dim })).join('\n')}
  CREATE STATISTICS IF NOT EXISTS cairn.memories_dims ON (vector_dims(embedding)) FROM cairn.memories;
  ANALYZE cairn.memories;`,
  // 12: cairn.text_matches ranks inside when the arm asks (store/pg/text-matches.ts), and the scope-text indexes its
  // walk of a scope reads instead of the table (asked for, built after the commit): at 1M, a 20k-memory project's
  // full-text arm read 20k table pages for a common term.
  `${TEXT_MATCHES_RANKED_MIGRATION}
  ${indexBuildMarkerSql({ kind: 'scope-text', part: 'short' })}
  ${indexBuildMarkerSql({ kind: 'scope-text', part: 'long' })}`,
];
