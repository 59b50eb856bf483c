/**
 * The embedding models a store holds vectors of: one table each (`vq_<n>`), recorded in vec_models with the model's
 * id and dimension, so switching models never mixes spaces (VectorTables.models and ensure).
 */
import { CairnError } from '../protocol/errors';
import { stmt, type DB } from './db';
import type { VecModel } from './vector-index';

/** The models with vectors, oldest first. */
export function listModels(db: DB): VecModel[] {
  return stmt(db, 'SELECT model, dimension, table_name AS "table" FROM vec_models ORDER BY created_at').all() as VecModel[];
}

/** Record a new model and create its table (the next free `vq_<n>`). */
export function addModel(db: DB, model: string, dimension: number): VecModel {
  if (!Number.isInteger(dimension) || dimension < 1 || dimension > 8192)
    throw new CairnError('InvalidParams', `bad embedding dimension ${dimension}`);
  const n =
    ((stmt(db, 'SELECT coalesce(max(CAST(substr(table_name, 4) AS INTEGER)), 0) AS n FROM vec_models').get() as { n: number }).n ?? 0) + 1;
  const table = createVectorTable(db, n);
  stmt(db, 'INSERT INTO vec_models(model, dimension, table_name, created_at) VALUES (?, ?, ?, ?)').run(model, dimension, table, Date.now());
  return { model, dimension, table };
}

/** The table of one model's vectors (`vq_<n>`). */
export function createVectorTable(db: DB, n: number): string {
  const table = `vq_${n}`;
  db.exec(`CREATE TABLE ${table} (rowid INTEGER PRIMARY KEY, q BLOB NOT NULL, sig BLOB NOT NULL, text_hash INTEGER NOT NULL)`);
  return table;
}
