import { bindingOfSoapVersion, readSoapRequest } from '@school/asmx';
import { type GroupDef, secretParamNames } from '@school/contract';
import type { FastifyInstance } from 'fastify';
import { header } from '../../http/headers.js';
import { EMPTY, soapBindingOf, soapRefusal } from './answers.js';
import type { Exchange } from './exchange.js';

/**
 * SOAP 1.1 and 1.2 on `POST /X.asmx` (docs/wire-contract.md): the envelope is read by the codec,
 * the operation found by its body element, and the call handed to the exchange (exchange.ts) —
 * the operation with its parameters, or the refusal: a fault, or ASMX's empty `400`/`415`.
 */
export function registerSoapRoute(app: FastifyInstance, group: GroupDef, exchange: Exchange): void {
  const namespace = app.config.SERVICE_NAMESPACE;
  const secrets = secretParamNames(group.operations);
  app.post(group.path, { config: { asmxGroup: group, asmxKind: 'soap' } }, async (request, reply) => {
    const parsed = readSoapRequest({
      body: (request.body as Buffer | undefined) ?? EMPTY,
      contentType: request.headers['content-type'],
      soapAction: header(request, 'soapaction'),
      group,
      namespace,
    });
    // Masked when recorded (recording/exchange.ts); what the reader took for a secret appears
    // nowhere in the record.
    const requestBody = parsed.xml ?? '';
    if (!parsed.ok) {
      // Recorded under the envelope's version, or the one assumed from the headers when the
      // media type names none (docs/bindings.md#how-each-binding-is-recorded).
      const binding = parsed.version ? bindingOfSoapVersion(parsed.version) : soapBindingOf(request);
      // A fault after the operation was found, or XML that could not be read for an operation
      // its headers name: recorded under it.
      const operation =
        parsed.kind === 'fault' || parsed.kind === 'unreadable' ? parsed.operation : undefined;
      return exchange(request, reply, soapRefusal({ binding, group, operation, requestBody }, parsed));
    }
    const { params } = parsed;
    return exchange(request, reply, {
      binding: bindingOfSoapVersion(parsed.version),
      group,
      operation: parsed.operation,
      read: (n) => params.get(n),
      requestBody,
      secretValues: secrets.map((name) => params.get(name)),
    });
  });
}
