// placeholder, replaced below
export function run(): Promise<void> { return Promise.resolve(); }
