/**
 * The indexer's tuning (indexer.ts): batch sizes, pacing against searches, the duplicate checks' threshold and the
 * store size above which the vector index is read on first use.
 */

export const INDEX_BATCH = 512;
/** Searches within this long make background embedding pace itself (see Indexer.paced). */
export const QUIET_MS = 1000;
/**
 * Texts per background request to the embedding worker, per model kind. A search's query embedding goes ahead of
 * queued requests but waits for the one being computed: 64 texts are well under a millisecond for the built-in
 * static model, but about 0.4 CPU-seconds for a transformer (all-MiniLM-L6-v2 here), which made hybrid search
 * during a bulk import wait that long; 8 texts (the transformer's model batch) bound the wait to one batch.
 */
export const EMBED_CHUNK = { builtin: 64, transformer: 8 } as const;
export const MAX_REST_MS = 250;
/**
 * An indexing pass starts this long after the first write that asks for it, so a stream of single writes is
 * embedded in batches (one worker round trip and a few transactions per batch instead of per write). A caller
 * waiting for the index (index/wait, waitForDuplicates) starts the pass at once instead.
 */
export const KICK_DELAY_MS = 50;
/** Vectors written per transaction (the daemon yields to requests between them). */
export const WRITE_CHUNK = 8;
/** Vectors written per transaction while no search is being served. */
export const QUIET_WRITE_CHUNK = 128;
/**
 * Cosine similarity at or above which a live memory of the same namespace is a possible duplicate, per model kind
 * (as FUSION): chosen on labelled pairs of software memories and confirmed on a held-out set
 * (bench/duplicates.ts, test/embed/duplicate-pairs.ts; figures in bench/README.md). The former single 0.93, set for
 * GloVe, caught 1 duplicate in 10 with either model.
 */
export const DUPLICATE_THRESHOLD = { builtin: 0.66, transformer: 0.67 } as const;
export const DUPLICATE_LIMIT = 5;
/**
 * A store with more vectors than this (about: the largest vector rowid, read without a scan) has its vector index
 * read into memory on first use (a hybrid search, or vectors to check for duplicates) instead of at start, so a
 * daemon nobody searches stays small (a million vectors hold ~210 MiB even compact); the first searches meanwhile
 * answer from full text (`degraded` says the index is loading). Smaller stores load at start as before.
 */
export const LAZY_LOAD_ABOVE = 131_072;
/**
 * Changes indexed (or memories re-embedded) after which the indexer, once it has drained its backlog, gives the
 * memory the process freed back to the system (Store.releaseFreedMemory: glibc keeps what SQLite, FTS5 and the
 * import's buffers freed; 22 MiB of 246 right after a 300k import). Once per bulk import, not per write.
 */
export const RELEASE_FREED_AFTER = 50_000;
