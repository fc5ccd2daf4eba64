import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseOptions, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The import rules live in the repository's .dependency-cruiser.cjs and run in `pnpm lint`. This
 * test proves that each of them bites: it cruises small trees that mirror the layout of
 * apps/server/src with the same configuration, each breaking one rule, and expects exactly that
 * rule to be named; and it expects the real tree to break none.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');

let options: ICruiseOptions;
let tsConfig: ReturnType<typeof extractTSConfig>;
const fixtures: string[] = [];

beforeAll(async () => {
  options = await extractDepcruiseOptions(CONFIG);
  tsConfig = extractTSConfig(options.tsConfig?.fileName as string);
});

afterAll(() => {
  for (const dir of fixtures) fs.rmSync(dir, { recursive: true, force: true });
});

/** Cruises apps/server/src and packages/ under `baseDir` as `pnpm lint` does. */
async function cruiseTree(baseDir: string): Promise<ICruiseResult> {
  const roots = ['apps/server/src', 'packages'].filter((dir) => fs.existsSync(path.join(baseDir, dir)));
  const { output } = await cruise(roots, { ...options, baseDir }, {}, { tsConfig });
  return output as ICruiseResult;
}

/** `no-circular: apps/server/src/a.ts → apps/server/src/b.ts ('./b.js')` */
const shown = (v: IViolation) =>
  `${v.rule.name}: ${v.from} → ${v.to}${v.unresolvedTo ? ` ('${v.unresolvedTo}')` : ''}`;

/** Writes `files` (path from the repository's root → source) to a fresh directory and cruises it. */
async function violationsOf(files: Record<string, string>): Promise<string[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'depcruise-'));
  fixtures.push(dir);
  for (const [file, source] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), source);
  }
  const result = await cruiseTree(dir);
  return [...new Set(result.summary.violations.map(shown))].sort();
}

const S = 'apps/server/src';

/** One tree per rule: what it breaks, and beside it what the rules allow. */
const cases: { rule: string; files: Record<string, string>; expected: string[] }[] = [
  {
    rule: 'store-imports-only-itself',
    files: {
      // A type-only import counts.
      [`${S}/store/calls.ts`]:
        "import type { Lane } from '../outbox/lanes.js';\nexport const lane: Lane = 'sms';\n",
      [`${S}/store/index.ts`]: "import { readFileSync } from 'node:fs';\nexport * from './calls.js';\n",
      [`${S}/outbox/lanes.ts`]: "export type Lane = 'sms';\n",
    },
    expected: [
      `store-imports-only-itself: ${S}/store/calls.ts → ${S}/outbox/lanes.ts ('../outbox/lanes.js')`,
    ],
  },
  {
    rule: 'store-only-through-index',
    files: {
      [`${S}/store/calls.ts`]: 'export const calls = 1;\n',
      [`${S}/store/index.ts`]: "export * from './calls.js';\n",
      [`${S}/outbox/enqueue.ts`]: "import { calls } from '../store/calls.js';\n",
      [`${S}/history/calls.ts`]: "import { calls } from '../store/index.js';\n",
    },
    expected: [
      `store-only-through-index: ${S}/outbox/enqueue.ts → ${S}/store/calls.ts ('../store/calls.js')`,
    ],
  },
  {
    rule: 'outbox-layer',
    files: {
      [`${S}/outbox/dispatcher.ts`]: "import type { Route } from '../routes/api/calls.js';\n",
      [`${S}/routes/api/calls.ts`]: 'export type Route = string;\n',
    },
    expected: [
      `outbox-layer: ${S}/outbox/dispatcher.ts → ${S}/routes/api/calls.ts ('../routes/api/calls.js')`,
    ],
  },
  {
    rule: 'recording-layer',
    files: {
      [`${S}/recording/exchange.ts`]: "import { store } from '../plugins/store.js';\n",
      [`${S}/plugins/store.ts`]: 'export const store = 1;\n',
    },
    expected: [`recording-layer: ${S}/recording/exchange.ts → ${S}/plugins/store.ts ('../plugins/store.js')`],
  },
  {
    // History and the statistics read deliveries through the outbox's functions: allowed.
    rule: 'history-layer',
    files: {
      [`${S}/history/calls.ts`]:
        "import { count } from '../stats/call-stats.js';\nimport { read } from '../outbox/deliveries.js';\n",
      [`${S}/stats/call-stats.ts`]:
        "import { read } from '../outbox/deliveries.js';\nexport const count = 1;\n",
      [`${S}/outbox/deliveries.ts`]: 'export const read = 1;\n',
    },
    expected: [`history-layer: ${S}/history/calls.ts → ${S}/stats/call-stats.ts ('../stats/call-stats.js')`],
  },
  {
    rule: 'stats-layer',
    files: {
      [`${S}/stats/call-stats.ts`]: "import { record } from '../recording/record.js';\n",
      [`${S}/recording/record.ts`]: 'export const record = 1;\n',
    },
    expected: [`stats-layer: ${S}/stats/call-stats.ts → ${S}/recording/record.ts ('../recording/record.js')`],
  },
  {
    rule: 'no-circular',
    files: {
      [`${S}/limits/window.ts`]: "import type { Limiter } from './limiter.js';\nexport type Window = 1;\n",
      [`${S}/limits/limiter.ts`]: "import type { Window } from './window.js';\nexport type Limiter = 2;\n",
    },
    // A cycle is named once, from one of its files.
    expected: [`no-circular: ${S}/limits/limiter.ts → ${S}/limits/window.ts ('./window.js')`],
  },
  {
    // No file imports itself back, yet the folders do.
    rule: 'no-folder-cycle',
    files: {
      [`${S}/auth/login.ts`]: "import { limit } from '../limits/limiter.js';\nexport const login = 1;\n",
      [`${S}/limits/limiter.ts`]: 'export const limit = 1;\n',
      [`${S}/limits/authcode.ts`]: "import { access } from '../auth/access.js';\n",
      [`${S}/auth/access.ts`]: 'export const access = 1;\n',
    },
    expected: [`no-folder-cycle: ${S}/auth → ${S}/limits`, `no-folder-cycle: ${S}/limits → ${S}/auth`],
  },
  {
    rule: 'src-root-only-from-cli',
    files: {
      [`${S}/config.ts`]: 'export const config = 1;\n',
      [`${S}/routes/health.ts`]: "import { config } from '../config.js';\n",
      [`${S}/cli/admin.ts`]: "import { config } from '../config.js';\n",
    },
    expected: [`src-root-only-from-cli: ${S}/routes/health.ts → ${S}/config.ts ('../config.js')`],
  },
  {
    rule: 'src-root-does-not-reach-cli',
    files: {
      [`${S}/app.ts`]: "import { login } from './auth/login.js';\n",
      [`${S}/auth/login.ts`]: "import { backup } from '../cli/backup.js';\nexport const login = 1;\n",
      [`${S}/cli/backup.ts`]: 'export const backup = 1;\n',
    },
    expected: [`src-root-does-not-reach-cli: ${S}/app.ts → ${S}/cli/backup.ts`],
  },
  {
    rule: 'not-to-unresolvable',
    files: {
      [`${S}/outbox/lanes.ts`]:
        "import type { Gone } from './gone.js';\nimport { missing } from 'no-such-package';\nexport const lane = 1;\n",
    },
    expected: [
      `not-to-unresolvable: ${S}/outbox/lanes.ts → ./gone.js ('./gone.js')`,
      `not-to-unresolvable: ${S}/outbox/lanes.ts → no-such-package ('no-such-package')`,
    ],
  },
  {
    rule: 'src-stays-in-src',
    files: {
      [`${S}/outbox/lanes.ts`]: "import { helper } from '../../test/helpers.js';\n",
      'apps/server/test/helpers.ts': 'export const helper = 1;\n',
    },
    expected: [
      `src-stays-in-src: ${S}/outbox/lanes.ts → apps/server/test/helpers.ts ('../../test/helpers.js')`,
    ],
  },
  {
    rule: 'packages-not-to-apps',
    files: {
      'packages/contract/src/index.ts': "import type { Config } from '../../../apps/server/src/config.js';\n",
      [`${S}/config.ts`]: 'export type Config = 1;\n',
    },
    expected: [
      `packages-not-to-apps: packages/contract/src/index.ts → ${S}/config.ts ('../../../apps/server/src/config.js')`,
    ],
  },
];

describe('the import rules (.dependency-cruiser.cjs)', () => {
  it('each has a tree below that breaks it', () => {
    const rules = (options.ruleSet?.forbidden ?? []).map((rule) => rule.name).sort();
    expect(rules).toEqual(cases.map((c) => c.rule).sort());
  });

  it.each(cases)('$rule bites', async ({ files, expected }) => {
    expect(await violationsOf(files)).toEqual(expected);
  });

  it('hold on the real tree, read whole', { timeout: 60_000 }, async () => {
    const result = await cruiseTree(ROOT);
    const sources = result.modules.map((m) => m.source);
    // A check that reads nothing passes everything: make sure the cruise saw the server and the
    // packages, and followed `.js` specifiers to `.ts` files and type-only imports.
    expect(sources).toContain(`${S}/app.ts`);
    expect(sources).toContain(`${S}/store/index.ts`);
    expect(sources).toContain('packages/contract/src/index.ts');
    const dependencies = result.modules.flatMap((m) => m.dependencies);
    expect(dependencies.some((d) => d.module.endsWith('.js') && d.resolved.endsWith('.ts'))).toBe(true);
    expect(dependencies.some((d) => d.dependencyTypes.includes('type-only'))).toBe(true);
    expect(result.summary.violations.map(shown)).toEqual([]);
  });
});
