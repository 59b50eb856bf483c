/**
 * The embedding models a store holds vectors of: one table each (`vq_<n>`), recorded in vec_models with the model's
 * id and dimension, so switching models never mixes spaces (VectorTables.models and ensure).
 */
import { CairnError } from '../protocol/errors';
import { stmt, type DB } from './db';
import type { VecModel } from './vector-index';

/** The models with vectors, oldest first. */
export function listModels(db: DB): VecModel[] {
  const rows = stmt(db, 'SELECT model, dimension, table_name AS "table", centre FROM vec_models ORDER BY created_at').all() as (VecModel & {
    centre: Buffer | null;
  })[];
  return rows.map((r) => ({ ...r, centre: readCentre(r.centre, r.dimension) }));
}

/** A stored centre (float32 little-endian, one per dimension); null when absent or of another length. */
function readCentre(blob: Buffer | null, dimension: number): Float32Array | null {
  if (!blob || blob.byteLength !== dimension * 4) return null;
  const out = new Float32Array(dimension);
  for (let i = 0; i < dimension; i++) out[i] = blob.readFloatLE(i * 4);
  return out;
}

function centreBlob(centre: Float32Array): Buffer {
  const b = Buffer.alloc(centre.length * 4);
  centre.forEach((x, i) => b.writeFloatLE(x, i * 4));
  return b;
}

/**
 * Record a new model and create its table (the next free `vq_<n>`). `centre`: what the table's signatures are centred
 * on (embed/signature-centre.ts), fixed for the table's life.
 */
export function addModel(db: DB, model: string, dimension: number, centre: Float32Array | null = null): VecModel {
  if (!Number.isInteger(dimension) || dimension < 1 || dimension > 8192)
    throw new CairnError('InvalidParams', `bad embedding dimension ${dimension}`);
  const n =
    ((stmt(db, 'SELECT coalesce(max(CAST(substr(table_name, 4) AS INTEGER)), 0) AS n FROM vec_models').get() as { n: number }).n ?? 0) + 1;
  const table = createVectorTable(db, n);
  if (centre && centre.length !== dimension)
    throw new CairnError('InvalidParams', `a centre of ${centre.length} for dimension ${dimension}`);
  stmt(db, 'INSERT INTO vec_models(model, dimension, table_name, created_at, centre) VALUES (?, ?, ?, ?, ?)').run(
    model,
    dimension,
    table,
    Date.now(),
    centre ? centreBlob(centre) : null,
  );
  return { model, dimension, table, centre };
}

/** The table of one model's vectors (`vq_<n>`). */
export function createVectorTable(db: DB, n: number): string {
  const table = `vq_${n}`;
  db.exec(`CREATE TABLE ${table} (rowid INTEGER PRIMARY KEY, q BLOB NOT NULL, sig BLOB NOT NULL, text_hash INTEGER NOT NULL)`);
  return table;
}
