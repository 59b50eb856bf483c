/**
 * Builds the language-neutral JSON Schema of the protocol from the zod
 * schemas in src/protocol. `npm run gen:schema -w daemon` writes
 * schema/protocol.schema.json; a test fails when the checked-in file is stale.
 */
import { z } from 'zod';
import { ErrorCodes, errorDescriptions } from '../src/protocol/errors';
import { Notifications, PROTOCOL_VERSION, Requests } from '../src/protocol/methods';
import { Filter } from '../src/protocol/types';

function schemaOf(t: z.ZodType, io: 'input' | 'output'): unknown {
  const s = z.toJSONSchema(t, { unrepresentable: 'any', io, reused: 'ref', cycles: 'ref' }) as Record<string, unknown>;
  delete s.$schema;
  return s;
}

export function buildProtocolSchema(): Record<string, unknown> {
  const methods: Record<string, unknown> = {};
  for (const def of Object.values(Requests)) {
    methods[def.method] = { description: def.doc, params: schemaOf(def.params, 'input'), result: schemaOf(def.result, 'output') };
  }
  const notifications: Record<string, unknown> = {};
  for (const def of Object.values(Notifications))
    notifications[def.method] = { description: def.doc, params: schemaOf(def.params, 'output') };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'Cairn protocol',
    description: 'JSON-RPC 2.0 over LSP base-protocol framing. Generated from daemon/src/protocol; do not edit by hand.',
    protocolVersion: PROTOCOL_VERSION,
    errors: Object.fromEntries(
      Object.entries(ErrorCodes).map(([name, code]) => [name, { code, description: errorDescriptions[name as keyof typeof ErrorCodes] }]),
    ),
    filter: schemaOf(Filter, 'input'),
    methods,
    notifications,
  };
}

export function renderProtocolSchema(): string {
  return JSON.stringify(buildProtocolSchema(), null, 2) + '\n';
}

if (require.main === module) {
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  const out = path.join(__dirname, '..', 'schema', 'protocol.schema.json');
  fs.writeFileSync(out, renderProtocolSchema());
  console.log(`wrote ${out}`);
}
