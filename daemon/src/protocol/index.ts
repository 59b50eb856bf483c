/** The Cairn protocol: one module shared by the daemon, CLI, extension, webview bridge, MCP bridge and tests. */
export * from './errors';
export * from './types';
export * from './methods';
export * from './namespace';
export * from './settings';
