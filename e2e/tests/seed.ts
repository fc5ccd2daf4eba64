import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { type Api, E2E_SCHOOL, registerE2eSchool } from './accounts.js';
import { baseUrl } from './browser.js';

// What the page-by-page suites (phone width, accessibility) share: data that makes every list
// show something long, and the console's pages with their headings.

export const marker = (prefix: string): string => `${prefix}-${randomBytes(4).toString('hex')}`;

export interface Seeded {
  readonly callId: number;
  readonly deliveryId: number;
  /** A call of the school with the long name, sent from Send for it: its page names the school. */
  readonly schoolCallId: number;
  /** That school's name. */
  readonly schoolName: string;
}

/**
 * Data that makes pages wide: a long school, a template, a book, a user, a call with a long user
 * agent and its delivery, a notification of a type without a template, and two refused calls (long
 * outcome badges; the Dashboard's error tables).
 */
export async function seed(api: Api): Promise<Seeded> {
  const json = { 'content-type': 'application/json' };
  const tag = randomBytes(3).toString('hex');
  // A number of this seed's own: AuthCode allows 5 codes a phone in 15 minutes, and the suites
  // that seed share one server with the other suites' codes.
  const phone = `+4479111${String(Number.parseInt(tag, 16) % 100_000).padStart(5, '0')}`;
  const schoolName = `Saint Bartholomew-the-Great Comprehensive Secondary School and Sixth Form College ${tag}`;
  const school = await api.fetch('/api/schools', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      name: schoolName,
      baseUrl: `https://a-very-long-school-domain-name-${tag}.example.org/some/long/path/segment/`,
      topicKey: `st-bartholomew-the-great-secondary-${tag}`,
      allowedIps: ['198.51.100.0/24', '2001:db8:abcd:12::/64'],
    }),
  });
  expect(school.status).toBe(201);
  const schoolId = ((await school.json()) as { id: number }).id;
  const template = await api.fetch('/api/templates', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      type: `homework-${tag}`,
      title: 'New homework for {id}',
      body: 'There is new homework for class {id}. Please log in to the school app to see the assignment.',
    }),
  });
  expect(template.status).toBe(201);
  const user = await api.fetch('/api/users', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      username: `operator.with.a.long.username.${tag}@example.org`,
      displayName: 'Operator With A Rather Long Display Name',
      password: 'operator-password-2026',
      role: 'operator',
    }),
  });
  expect(user.status).toBe(201);
  const book = await api.fetch(`/api/books/term-2026-autumn-${tag}/class-7B-extended-name`, {
    method: 'PUT',
    headers: { 'content-type': 'application/pdf' },
    body: '%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n',
  });
  expect(book.status).toBe(200);

  // A SOAP call from a school's server, with a user agent that has no space to wrap at.
  const agent = `SchoolServer/4.2.1 (${marker('phone-width')}; VeryLongAgentNameWithoutSpaces_${'A'.repeat(60)})`;
  const envelope =
    '<?xml version="1.0" encoding="utf-8"?>' +
    '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
    `<AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>${phone}</phone></AuthCode>` +
    '</soap:Body></soap:Envelope>';
  const soap = await fetch(`${baseUrl()}/AuthCodeSending.asmx`, {
    method: 'POST',
    headers: {
      'Content-Type': 'text/xml; charset=utf-8',
      SOAPAction: '"http://tempuri.org/AuthCode"',
      'User-Agent': agent,
    },
    body: envelope,
  });
  expect(soap.status).toBe(200);

  // A notification of a type no template answers: Templates lists it under "Types received
  // without a template".
  await registerE2eSchool(api);
  const untemplated = await fetch(
    `${baseUrl()}/NotificationNotes.asmx/SendNotificationType?${new URLSearchParams({ id: '5', baseUrlSchool: E2E_SCHOOL, TypeNotfication: `sports-day-${tag}` })}`,
  );
  expect(untemplated.status).toBe(200);

  // Refusals, whose badges are among the longest ("Refused: no such book (404)").
  const noBook = await fetch(
    `${baseUrl()}/BookPdf.asmx/GetBookPdfByTerm?termId=no-such-term-${tag}&srid=S-1&classId=9Z`,
  );
  expect(noBook.status).toBe(404);
  const notXml = await fetch(`${baseUrl()}/AuthCodeSending.asmx`, {
    method: 'POST',
    headers: { 'Content-Type': 'text/xml; charset=utf-8', SOAPAction: '"http://tempuri.org/AuthCode"' },
    body: '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>',
  });
  expect(notXml.status).toBeGreaterThanOrEqual(400);

  const calls = (await (await api.fetch('/api/calls?operation=AuthCode&binding=soap11')).json()) as {
    items: { id: number; userAgent: string | null }[];
  };
  const callId = calls.items.find((c) => c.userAgent === agent)?.id;
  expect(callId).toBeGreaterThan(0);
  const deliveries = (await (await api.fetch('/api/deliveries?kind=sms')).json()) as {
    items: { id: number }[];
  };
  const deliveryId = deliveries.items[0]?.id;
  expect(deliveryId).toBeGreaterThan(0);

  // A code sent from Send for the school with the long name: the call is that school's.
  const sent = await api.fetch('/api/operations/AuthCode', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ code: '4821', phone, schoolId }),
  });
  expect(sent.status).toBe(200);
  const schoolCallId = ((await sent.json()) as { id: number }).id;
  return { callId: callId as number, deliveryId: deliveryId as number, schoolCallId, schoolName };
}

/** The console's pages for someone logged in as the admin, each with its heading. */
export const consolePages = ({
  callId,
  deliveryId,
  schoolCallId,
}: Seeded): [path: string, heading: string | RegExp][] => [
  ['/dashboard', 'Dashboard'],
  ['/send/AuthCode', 'Send'],
  ['/send/SendNotificationType', 'Send'],
  ['/history', 'History'],
  [`/history/${callId}`, `Call #${callId}`],
  [`/history/${schoolCallId}`, `Call #${schoolCallId}`],
  ['/deliveries', 'Deliveries'],
  [`/deliveries/${deliveryId}`, `Delivery #${deliveryId}`],
  ['/books', 'Books'],
  ['/schools', 'Schools'],
  ['/templates', 'Templates'],
  ['/users', 'Users'],
  ['/audit', 'Audit'],
  ['/service', 'Service'],
  ['/account', 'Account and security'],
];

/** Opens `path` and waits for its heading and its data (no "Loading…" left). */
export async function openPage(page: Page, path: string, heading: string | RegExp): Promise<void> {
  await page.goto(path);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  await expect.poll(() => page.locator('.status-loading').count(), { timeout: 15_000 }).toBe(0);
}
