// Software vocabulary for the built-in static model (see build-builtin-model.mjs).
//
// GloVe 6B was trained on 2014 Wikipedia + newswire: many programming terms are
// missing (async, regex, kubernetes, ...) or only known in another sense (git is
// mostly an insult there, repo a finance term, bash a party, mocha a coffee).
//
// Each entry maps a term to a plain-English phrase made of common words:
//   'term': 'phrase'   the term keeps its GloVe vector when GloVe has it (and is always
//                      put in the vocabulary); otherwise it gets the phrase's vector.
//   'term': '!phrase'  the phrase's vector always replaces GloVe's (wrong sense).
// A phrase vector is the mean of its words' GloVe vectors, rescaled to their mean norm.
export const TECH_TERMS = {
  // languages, runtimes, tools
  async: 'asynchronous', await: 'asynchronous wait', sync: 'synchronous',
  nodejs: 'javascript server runtime', npm: '!javascript package manager', npx: 'javascript package runner',
  pnpm: 'javascript package manager', yarn: 'yarn', deno: 'javascript runtime', bun: 'bun',
  typescript: 'typed javascript', tsx: 'typescript javascript markup', jsx: 'javascript html markup',
  js: 'javascript', ts: 'typescript', py: 'python', rb: 'ruby', golang: 'go programming language',
  rustc: 'rust compiler', cargo: 'cargo', pip: 'python package installer', pypi: 'python package index',
  webpack: 'javascript bundler', esbuild: 'javascript bundler compiler', vite: '!javascript web bundler server',
  rollup: 'rollup', babel: 'babel', bundler: '!javascript bundler', transpile: 'compile javascript',
  transpiler: 'javascript compiler', polyfill: 'browser compatibility code', minify: 'compress javascript code',
  wasm: 'browser binary code', webassembly: 'browser binary code',
  eslint: 'javascript linter', linter: 'code style checker', lint: '!code style checking', linting: 'code style checking',
  prettier: 'prettier', formatter: 'code formatter', jest: '!javascript testing framework', mocha: '!javascript testing framework',
  vitest: 'javascript testing framework', pytest: 'python testing framework', junit: 'java testing framework',
  unittest: 'unit test', e2e: 'end to end testing', tdd: 'test driven development',
  react: 'react', vue: '!javascript ui framework', svelte: 'javascript ui framework', angular: 'angular',
  nextjs: 'react web framework', django: 'python web framework', flask: 'flask', rails: 'rails',
  vscode: 'code editor', ide: 'development environment editor', vim: '!text editor', emacs: 'text editor',
  tmux: 'terminal multiplexer', zsh: 'unix shell', bash: '!unix shell script', shell: 'shell',
  cli: 'command line interface', repl: 'interactive programming shell', stdlib: 'standard library',
  sdk: 'software development kit', api: 'api', apis: 'apis', gui: 'graphical user interface',
  ui: '!user interface', ux: '!user experience', dom: '!browser document tree',
  // version control and collaboration
  git: '!version control repository', github: 'code hosting repository', gitlab: 'code hosting repository',
  bitbucket: 'code hosting repository', repo: '!code repository', repos: 'code repositories',
  monorepo: 'single code repository', gitignore: 'ignored files list', gitignored: 'ignored by version control',
  rebase: 'rewrite commit history', submodule: 'nested repository', changelog: 'list of changes',
  readme: '!documentation file', pr: '!pull request', prs: 'pull requests', ci: '!continuous integration',
  cicd: 'continuous integration deployment', devops: 'software operations deployment',
  hotfix: 'urgent bug fix', hotfixes: 'urgent bug fixes', bugfix: 'bug fix', todo: '!task to do', todos: 'tasks to do',
  fixme: 'needs fixing', refactor: 'restructure code', refactored: 'restructured code', refactoring: 'restructuring code',
  codebase: '!source code', boilerplate: 'boilerplate', semver: 'semantic version numbers', lockfile: 'dependency lock file',
  // data, storage, formats
  json: 'json', jsonl: 'json lines', yaml: 'yaml', yml: 'yaml', toml: 'configuration file format',
  csv: 'csv', xml: 'xml', sqlite: 'sqlite', postgres: 'postgresql database', postgresql: 'postgresql',
  mysql: 'mysql', mongodb: 'document database', redis: 'memory cache database', elasticsearch: 'search engine index',
  nosql: 'non relational database', orm: '!object relational mapping', sql: 'sql', upsert: 'update or insert',
  btree: 'balanced tree index', schema: 'schema', schemas: 'schemas', migrations: 'migrations',
  utf8: 'unicode text encoding', unicode: 'unicode', ascii: 'ascii', base64: 'binary text encoding',
  sha256: 'cryptographic hash', md5: 'cryptographic hash', hashmap: 'hash table', dict: '!dictionary map',
  enum: 'enumeration', struct: 'data structure', bool: '!boolean', int: '!integer', str: 'string',
  nullable: 'may be null', undefined: 'undefined', nullptr: 'null pointer', typedef: 'type definition',
  params: 'parameters', param: 'parameter', args: '!arguments', argv: 'command line arguments', kwargs: 'keyword arguments',
  init: '!initialize', config: 'configuration', configs: 'configuration files', env: '!environment variables',
  dotenv: 'environment variables file', dotfiles: 'configuration files', timestamp: 'time stamp', timestamps: 'time stamps',
  datetime: 'date and time', timezone: '!time zone', timezones: 'time zones', iso8601: 'date time format',
  embeddings: '!vector representations', embedding: 'embedding', tokenizer: 'text tokenization', vectorize: 'convert to vectors',
  serialize: '!convert to bytes', deserialize: 'parse serialized data', serializer: 'serialization', serialization: 'serialization',
  // concurrency, runtime behaviour
  mutex: 'mutual exclusion lock', semaphore: 'semaphore', deadlock: 'deadlock', goroutine: 'concurrent thread',
  coroutine: 'concurrent routine', threadpool: 'thread pool', callback: 'callback', callbacks: 'callbacks',
  promise: 'promise', debounce: 'delay repeated events', debounced: 'delayed repeated events', throttle: 'throttle',
  memoize: 'cache results', memoization: 'caching results', idempotent: 'idempotent', retry: '!try again',
  retries: 'tries again', backoff: 'wait before retrying', timeout: 'timeout', timeouts: 'timeouts',
  stacktrace: 'stack trace', traceback: '!error stack trace', segfault: 'memory access crash', oom: 'out of memory',
  nan: '!not number', truthy: 'true value', falsy: 'false value', runtime: 'runtime',
  // web, network, security
  http: 'http', https: 'https', localhost: 'local computer server', cors: 'cross origin requests',
  csrf: 'cross site request forgery', xss: 'cross site scripting', oauth: '!authorization protocol login',
  jwt: '!authentication token', sso: 'single sign on', webhook: 'http callback notification', webhooks: 'http callback notifications',
  websocket: 'web socket', websockets: 'web sockets', grpc: 'remote procedure call', rpc: '!remote procedure call',
  jsonrpc: 'json remote procedure call', endpoint: 'endpoint', endpoints: 'endpoints', middleware: 'middleware',
  stdout: 'standard output', stderr: 'standard error output', stdin: 'standard input', uuid: 'unique identifier',
  guid: '!unique identifier', url: 'url', urls: 'urls', nginx: 'web server proxy', graphql: 'api query language',
  // platforms, infrastructure
  docker: '!software container', dockerfile: 'container build file', kubernetes: 'container orchestration cluster',
  k8s: 'container orchestration cluster', kubectl: 'container cluster command', terraform: 'terraform', serverless: 'cloud functions',
  aws: 'amazon cloud', gcp: 'google cloud', azure: 'azure', macos: 'mac operating system', win32: 'windows',
  wsl: 'windows linux subsystem', linux: 'linux', posix: 'posix', arm64: 'arm processor', cuda: 'gpu computing',
  // machine learning
  onnx: 'neural network model format', llm: 'large language model', llms: 'large language models',
  gpt: 'language model', openai: 'artificial intelligence company', chatgpt: 'artificial intelligence chat assistant',
  // abbreviations and jargon common in code, commit messages and READMEs
  regex: 'regular expression', regexp: 'regular expression', glob: 'file name pattern', globs: 'file name patterns',
  deps: 'dependencies', dep: 'dependency', stringify: 'convert to string', href: 'link url', req: 'request', cwd: 'current directory',
  utf: 'unicode', mjs: 'javascript module', cjs: 'javascript module', esm: 'javascript modules', protobuf: 'binary serialization format',
  dev: '!development', devs: 'developers', src: 'source code', dist: 'distribution build', lib: 'library', libs: 'libraries',
  pkg: 'package', impl: 'implementation', util: 'utility', utils: 'utilities', fn: 'function', func: 'function', msg: 'message',
  err: '!error', ctx: 'context', cfg: 'configuration', tmp: 'temporary', auth: 'authentication', authz: 'authorization',
  db: '!database', dbs: 'databases', perf: 'performance', prod: '!production', tz: 'time zone', i18n: 'internationalization',
  l10n: 'localization', a11y: 'accessibility', gzip: 'compression', tarball: 'compressed archive', eof: 'end of file',
  crlf: 'line endings', newline: 'line break', newlines: 'line breaks', whitespace: 'spaces', fullstack: 'frontend and backend',
  ssr: 'server side rendering', scss: 'css stylesheet', tailwind: 'css framework', markdown: 'text formatting markup',
  frontmatter: 'document metadata', healthcheck: 'health check', cron: '!scheduled task', cronjob: 'scheduled task',
  pid: '!process id', uid: 'user id', sudo: 'administrator privileges', chmod: 'file permissions', symlink: 'symbolic link',
  symlinks: 'symbolic links', mmap: 'memory mapped file', malloc: 'memory allocation', alloc: 'allocate memory',
  gc: '!garbage collection', vm: '!virtual machine', vms: 'virtual machines', nvme: 'solid state disk', iot: 'internet of things',
  saas: 'software service', oss: 'open source', foss: 'free open source', rag: '!retrieval augmented generation',
  finetune: 'fine tune', finetuning: 'fine tuning', pretrained: 'pre trained', dataset: 'dataset', parquet: '!columnar data file',
  etl: 'data pipeline', saml: 'single sign on', ldap: 'directory service', rbac: 'role based access control',
  acl: '!access control list', mfa: 'multi factor authentication', otp: 'one time password', cve: 'security vulnerability',
  vuln: 'vulnerability', hmr: 'hot module reload', lru: 'least recently used', ttl: 'time to live', qps: 'queries per second',
  sla: 'service level agreement', pii: 'personal data', gdpr: 'data protection regulation', ssg: 'static site generator',
  cdn: '!content delivery network', dns: 'dns', vpn: 'vpn', ssh: 'ssh', tcp: 'tcp', udp: 'udp',
};
