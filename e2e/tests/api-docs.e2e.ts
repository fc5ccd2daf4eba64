import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, apiSession } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, screenshot } from './browser.js';

// The console API's documentation (Service → "API documentation"): Swagger UI at /api/docs,
// served by the real server under the console's Content-Security-Policy, rendering every
// operation of the OpenAPI document the server generates.

interface OpenApi {
  paths: Record<string, Record<string, { summary?: string }>>;
}

/** "GET /api/calls List calls, newest first", for every operation of the document. */
async function documentedOperations(): Promise<string[]> {
  const api = await apiSession(baseUrl());
  const res = await api.fetch('/api/openapi.json');
  expect(res.status).toBe(200);
  const doc = (await res.json()) as OpenApi;
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) =>
      `${method.toUpperCase()} ${path} ${op.summary ?? ''}`.trim(),
    ),
  );
}

describe.skipIf(!browserAvailable())('API documentation (real server, Chromium)', () => {
  // After each test: nothing blocked by the policy, no asset missing (a 404 is a console error),
  // no script error.
  const suite = browserSuite('logged-in');
  let operations: string[];

  beforeAll(async () => {
    operations = await documentedOperations();
  });

  for (const path of ['/api/docs', '/api/docs/']) {
    it(`lists every operation of the API at ${path}`, async () => {
      const { page } = suite.session;
      const response = await page.goto(path);
      expect(response?.status()).toBe(200);
      await page.getByRole('heading', { name: /School Messaging and Book Service — console API/ }).waitFor();
      // One row per operation, a button named by its method, path and summary.
      expect(operations.length).toBeGreaterThan(10);
      for (const operation of operations) {
        await page.getByRole('button', { name: operation, exact: true }).waitFor();
      }
      for (const group of ['operations', 'calls', 'deliveries', 'schools', 'users']) {
        await page.getByRole('link', { name: group, exact: true }).waitFor();
      }

      // An operation opens on its description and parameters.
      await page
        .getByRole('button', { name: 'POST /api/operations/{name} Run an operation', exact: true })
        .click();
      await page.getByText(/exactly as the \.asmx endpoints do/).waitFor();
      await page.getByRole('button', { name: 'Try it out' }).waitFor();
      await screenshot(page, `api-docs${path.endsWith('/') ? '-slash' : ''}`);
    });
  }
});

describe.skipIf(!browserAvailable())('API documentation before logging in (real server, Chromium)', () => {
  const suite = browserSuite('fresh');

  it('sends a browser to log in first, then to the documentation it asked for', async () => {
    const { page } = suite.session;
    await page.goto('/api/docs');
    // The console's login page, not a bare 401: it says where it returns to.
    await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/api/docs');
    await page.getByLabel('Username', { exact: true }).fill(ADMIN.username);
    await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { name: /School Messaging and Book Service — console API/ }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/api/docs');
  });
});
