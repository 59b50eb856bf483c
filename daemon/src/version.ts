/** Cairn's version, shown by initialize, status and --version. */
export const VERSION = '0.1.0';
