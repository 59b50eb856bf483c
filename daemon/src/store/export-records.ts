/**
 * The JSON Lines records of an export (ExportRecord in the protocol), built from stored rows: one copy for the local
 * export (portable.ts) and the team export (pg/admin.ts), whose rows have the same columns.
 */
import type { ExportRecord } from '../protocol/types';
import { iso, isoReq, toMemory, type MemoryRow } from './rows';

export function headerRecord(now: number, schemaVersion: number): ExportRecord {
  return { type: 'header', format: 'cairn-export', version: 1, exportedAt: new Date(now).toISOString(), schemaVersion };
}

export function namespaceRecord(n: {
  id: string;
  path: string;
  created_at: number;
  deleted_at: number | null;
  deleted_by: string | null;
}): ExportRecord {
  return {
    type: 'namespace',
    id: n.id,
    path: n.path,
    createdAt: isoReq(n.created_at),
    deletedAt: iso(n.deleted_at),
    deletedBy: n.deleted_by,
  };
}

export function memoryRecord(r: MemoryRow): ExportRecord {
  return { type: 'memory', memory: toMemory(r), namespaceId: r.ns_id, deleteReason: r.delete_reason };
}

export function linkRecord(l: { src: string; dst: string; type: string; created_at: number; actor: string }): ExportRecord {
  return { type: 'link', link: { from: l.src, to: l.dst, type: l.type as never, createdAt: isoReq(l.created_at), actor: l.actor } };
}

export function rejectedRecord(r: {
  ns_id: string;
  value_hash: string;
  memory_id: string | null;
  actor: string;
  at: number;
}): ExportRecord {
  return { type: 'rejected', namespaceId: r.ns_id, valueHash: r.value_hash, memoryId: r.memory_id, actor: r.actor, at: isoReq(r.at) };
}
