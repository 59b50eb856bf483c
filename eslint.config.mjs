// Lint configuration (ESLint flat config with typescript-eslint), run by scripts/test.sh as one counted check:
// `npm run lint`. The rule set is the recommended one of ESLint and typescript-eslint, adjusted below where the
// codebase has a deliberate, documented pattern.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', '**/out/**', 'daemon/models/**', '.e2e/**', 'test-artifacts/**', 'daemon/schema/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: {
        // Node.js (the daemon, CLI, scripts, tests) and the browser globals the e2e scripts use.
        process: 'readonly',
        Buffer: 'readonly',
        __dirname: 'readonly',
        __filename: 'readonly',
        require: 'readonly',
        module: 'writable',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        clearImmediate: 'readonly',
        queueMicrotask: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        fetch: 'readonly',
        structuredClone: 'readonly',
        performance: 'readonly',
        globalThis: 'readonly',
        NodeJS: 'readonly',
      },
    },
    rules: {
      // Unused names are errors, except deliberately ignored ones (`_x`) and rest siblings used to drop fields.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // A variable read by a callback before its one assignment (a client and its own error handler) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Harnesses (tests, benchmarks, build and schema tools): lazy require() of native or optional modules and
    // loosely typed protocol probes are their job.
    files: ['test/**', 'bench/**', 'daemon/tools/**', 'daemon/scripts/**', 'extension/scripts/**', 'extension/src/test/**', 'scripts/**'],
    rules: { '@typescript-eslint/no-require-imports': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The e2e scripts pass functions to the page (page.evaluate): those run in the browser.
    files: ['test/e2e/**/*.js'],
    languageOptions: {
      globals: {
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        getComputedStyle: 'readonly',
        requestAnimationFrame: 'readonly',
        HTMLElement: 'readonly',
        Element: 'readonly',
      },
    },
  },
  {
    // CommonJS scripts (the e2e harness, bin entry points).
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
