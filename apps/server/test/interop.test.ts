/**
 * Interop with a real SOAP client: node-soap builds its proxy from our own WSDL, served by the
 * real app on a real port, and calls every operation over SOAP 1.1 and SOAP 1.2 (docs/bindings.md,
 * docs/faults.md, docs/wire-contract.md#wsdl). What is asserted is what such a client observes:
 * the result or the fault it gets, the bytes on the wire, and the call record the server keeps.
 */
import { type GroupDef, groups } from '@school/contract';
import * as soap from 'soap';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastCall, registerSchool, startTestApp, type TestApp } from './helpers.js';

const NS = 'http://tempuri.org/';
const PHONE = '+447911123456';
const BAD_PHONE = '12345';
const SCHOOL = 'https://school.example.org/';

/** A valid call of every operation in the table, and what comes of it. */
const VALID: Record<string, { args: Record<string, string>; fault?: RegExp }> = {
  AuthCode: { args: { code: '4821', phone: PHONE } },
  GetBookPdfByTerm: {
    args: { termId: '2026-1', srid: 'S-1042', classId: '7B' },
    // No book has been uploaded, so the lookup finds none (docs/faults.md#the-operations-own-refusals).
    fault: /no book exists for term '2026-1' and class '7B'/i,
  },
  SendNotificationType: { args: { id: '1201', baseUrlSchool: SCHOOL, TypeNotfication: 'homework' } },
  SendMarkNotes: { args: { id: '88', id_class: '7B', baseUrlSchool: SCHOOL } },
  pushNoti: { args: {} },
};

interface Version {
  readonly label: string;
  readonly binding: 'soap11' | 'soap12';
  /** Suffix of the WSDL port, e.g. `Soap12` for `AuthCodeSendingSoap12`. */
  readonly port: 'Soap' | 'Soap12';
  readonly envelopeNs: string;
  readonly contentType: string;
  readonly clientCode: string;
}

const VERSIONS: readonly Version[] = [
  {
    label: 'SOAP 1.1',
    binding: 'soap11',
    port: 'Soap',
    envelopeNs: 'http://schemas.xmlsoap.org/soap/envelope/',
    contentType: 'text/xml; charset=utf-8',
    clientCode: 'soap:Client',
  },
  {
    label: 'SOAP 1.2',
    binding: 'soap12',
    port: 'Soap12',
    envelopeNs: 'http://www.w3.org/2003/05/soap-envelope',
    contentType: 'application/soap+xml; charset=utf-8',
    clientCode: 'soap:Sender',
  },
];

/** What the client saw of one exchange. */
interface Observed {
  readonly error: (Error & { root?: unknown }) | null;
  readonly result: unknown;
  readonly status: number;
  readonly body: string;
  readonly responseHeaders: Record<string, unknown>;
  readonly requestHeaders: Record<string, unknown>;
  readonly endpoint: string | undefined;
}

type PortMethod = (
  args: Record<string, string>,
  callback: (err: (Error & { root?: unknown }) | null, result: unknown) => void,
) => void;

/** Calls `service.port.op` the way an application would, and records what came back. */
function invoke(
  client: soap.Client,
  service: string,
  port: string,
  op: string,
  args: Record<string, string>,
): Promise<Observed> {
  const method = client[service]?.[port]?.[op] as PortMethod | undefined;
  if (typeof method !== 'function') throw new Error(`the WSDL gave the client no ${service}.${port}.${op}`);
  return new Promise((resolve) => {
    let status = 0;
    client.once('response', (_body: unknown, response: { status?: number } | undefined) => {
      status = response?.status ?? 0;
    });
    method(args, (error, result) => {
      resolve({
        error,
        result,
        status,
        body: String(client.lastResponse ?? ''),
        responseHeaders: { ...(client.lastResponseHeaders ?? {}) },
        requestHeaders: { ...(client.lastRequestHeaders ?? {}) },
        endpoint: client.lastEndpoint,
      });
    });
  });
}

/** The ASMX success envelope, byte for byte (docs/wire-contract.md#soap-success-answers). */
function successBody(version: Version, op: string): string {
  return `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${version.envelopeNs}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><${op}Response xmlns="${NS}" /></soap:Body></soap:Envelope>`;
}

/** The fault's code and text as node-soap parsed them, whichever the version. */
function faultOf(observed: Observed, version: Version): { code: unknown; text: unknown } {
  const root = observed.error?.root as
    | { Envelope?: { Body?: { Fault?: Record<string, unknown> } } }
    | undefined;
  const fault = root?.Envelope?.Body?.Fault;
  if (!fault) throw new Error(`expected a SOAP fault, got ${observed.error?.message ?? 'success'}`);
  if (version.binding === 'soap11') return { code: fault.faultcode, text: fault.faultstring };
  const code = (fault.Code as { Value?: unknown } | undefined)?.Value;
  const text = (fault.Reason as { Text?: { $value?: unknown } } | undefined)?.Text?.$value;
  return { code, text };
}

let t: TestApp;
let base: string;
const clients = new Map<string, soap.Client>();
const clientKey = (group: GroupDef, version: Version) => `${group.name} ${version.binding}`;

function clientFor(group: GroupDef, version: Version): soap.Client {
  const client = clients.get(clientKey(group, version));
  if (!client) throw new Error(`no client for ${clientKey(group, version)}`);
  return client;
}

beforeAll(async () => {
  t = await startTestApp();
  await registerSchool(t.app);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  if (!address || typeof address === 'string') throw new Error('the app is not listening on TCP');
  base = `http://127.0.0.1:${address.port}`;
  // Every client is built from the WSDL our server serves, as a developer would build one.
  await Promise.all(
    groups.flatMap((group) =>
      VERSIONS.map(async (version) => {
        const client = await soap.createClientAsync(`${base}${group.path}?wsdl`, {
          forceSoap12Headers: version.binding === 'soap12',
        });
        clients.set(clientKey(group, version), client);
      }),
    ),
  );
});

afterAll(async () => {
  await t?.close();
});

it('has a valid call for every operation in the table', () => {
  const names = groups.flatMap((g) => g.operations.map((op) => op.name));
  expect(Object.keys(VALID).sort()).toEqual([...names].sort());
});

for (const group of groups) {
  describe(group.path, () => {
    it('serves a WSDL whose four service ports point at the listening server', async () => {
      const res = await fetch(`${base}${group.path}?wsdl`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/xml; charset=utf-8');
      const wsdl = await res.text();
      const ports = [
        ...wsdl.matchAll(/<wsdl:port name="([^"]+)"[^>]*>\s*<(\w+):address location="([^"]*)"/g),
      ].map(([, name, prefix, location]) => ({ name, prefix, location }));
      const url = `${base}${group.path}`;
      expect(ports).toEqual([
        { name: `${group.name}Soap`, prefix: 'soap', location: url },
        { name: `${group.name}Soap12`, prefix: 'soap12', location: url },
        { name: `${group.name}HttpGet`, prefix: 'http', location: url },
        { name: `${group.name}HttpPost`, prefix: 'http', location: url },
      ]);

      // node-soap keeps the SOAP ports (it has no HTTP GET/POST bindings) at the same address.
      const client = clientFor(group, VERSIONS[0] as Version);
      const parsed = client.wsdl.definitions.services[group.name]?.ports ?? {};
      expect(
        Object.fromEntries(
          Object.entries(parsed).map(([name, port]) => [name, (port as { location: string }).location]),
        ),
      ).toEqual({ [`${group.name}Soap`]: url, [`${group.name}Soap12`]: url });
    });

    it("describes each operation's parameters in the table's order", () => {
      const described = clientFor(group, VERSIONS[0] as Version).describe()[group.name];
      for (const version of VERSIONS) {
        for (const op of group.operations) {
          const input = described?.[`${group.name}${version.port}`]?.[op.name]?.input ?? {};
          expect(Object.keys(input), `${version.port} ${op.name}`).toEqual(op.params.map((p) => p.name));
        }
      }
    });

    for (const version of VERSIONS) {
      describe(`over ${version.label}`, () => {
        const port = `${group.name}${version.port}`;

        it.each(group.operations.map((op) => op.name))(`${port}.%s`, async (opName) => {
          const valid = VALID[opName];
          if (!valid) throw new Error(`no valid call for ${opName}`);
          const client = clientFor(group, version);
          const before = await t.app.history.count();

          const observed = await invoke(client, group.name, port, opName, valid.args);

          // The request really went out in this version, to the address the WSDL gave.
          expect(observed.endpoint).toBe(`${base}${group.path}`);
          if (version.binding === 'soap11') {
            expect(observed.requestHeaders.SOAPAction).toBe(`"${NS}${opName}"`);
            expect(observed.requestHeaders['Content-Type']).toBe('text/xml; charset=utf-8');
          } else {
            expect(observed.requestHeaders.SOAPAction).toBeUndefined();
            expect(observed.requestHeaders['Content-Type']).toBe(
              `application/soap+xml; charset=utf-8; action="${NS}${opName}"`,
            );
          }
          expect(observed.responseHeaders['content-type']).toBe(version.contentType);

          if (valid.fault) {
            expect(observed.error).toBeInstanceOf(Error);
            expect(observed.status).toBe(500);
            const fault = faultOf(observed, version);
            expect(fault.code).toBe(version.clientCode);
            expect(fault.text).toMatch(valid.fault);
          } else {
            expect(observed.error).toBeNull();
            expect(observed.status).toBe(200);
            // The result element is empty: node-soap hands the application nothing.
            expect(observed.result).toBeNull();
            expect(observed.body).toBe(successBody(version, opName));
            expect(observed.responseHeaders['cache-control']).toBe('private, max-age=0');
          }

          // Recorded before the answer was sent: exactly one new record, for this call.
          expect(await t.app.history.count()).toBe(before + 1);
          const call = await lastCall(t.app);
          expect(call).toMatchObject({
            group_name: group.name,
            operation: opName,
            binding: version.binding,
            outcome: valid.fault ? 'client-error' : 'ok',
            status: valid.fault ? 500 : 200,
          });
          if (opName === 'AuthCode') {
            // The auth code is never kept in clear.
            expect(JSON.parse(call.params ?? '{}')).toEqual({ code: '***', phone: PHONE });
            expect(call.request).not.toContain('4821');
          }
        });
      });
    }
  });
}

for (const version of VERSIONS) {
  describe(`AuthCode with an invalid phone over ${version.label}`, () => {
    it('rejects with a client fault that names the phone', async () => {
      const group = groups.find((g) => g.name === 'AuthCodeSending') as GroupDef;
      const client = clientFor(group, version);
      const before = await t.app.history.count();

      const observed = await invoke(client, group.name, `${group.name}${version.port}`, 'AuthCode', {
        code: '4821',
        phone: BAD_PHONE,
      });

      expect(observed.error).toBeInstanceOf(Error);
      expect(observed.status).toBe(500);
      expect(observed.responseHeaders['content-type']).toBe(version.contentType);
      expect(observed.responseHeaders['cache-control']).toBe('private');
      const fault = faultOf(observed, version);
      expect(fault.code).toBe(version.clientCode);
      expect(fault.text).toMatch(/phone/);
      expect(fault.text).toContain(BAD_PHONE);

      expect(await t.app.history.count()).toBe(before + 1);
      expect(await lastCall(t.app)).toMatchObject({
        group_name: group.name,
        operation: 'AuthCode',
        binding: version.binding,
        outcome: 'client-error',
        status: 500,
      });
    });
  });
}
