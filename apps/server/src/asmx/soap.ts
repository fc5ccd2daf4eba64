import {
  bindingOfSoapVersion,
  faultEnvelope,
  maskRequestBody,
  readSoapRequest,
  soapContentType,
} from '@school/asmx';
import { type GroupDef, secretParamNames } from '@school/contract';
import type { FastifyInstance } from 'fastify';
import { type AsmxAnswers, EMPTY, FAULT_CACHE, header, plainFailure, soapBindingOf } from './answers.js';

/**
 * SOAP 1.1 and 1.2 on `POST /X.asmx` (docs/wire-contract.md): the envelope is read by the codec,
 * the operation found by its body element, and every answer — success or fault — recorded.
 */
export function registerSoapRoute(app: FastifyInstance, group: GroupDef, answers: AsmxAnswers): void {
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
    const requestBody = maskRequestBody(
      parsed.ok || parsed.kind === 'fault' ? (parsed.xml ?? '') : '',
      secrets,
      // Safety net: what the reader took for a secret appears nowhere in the record.
      parsed.ok ? secrets.map((name) => parsed.params.get(name)) : [],
    );
    if (!parsed.ok && parsed.kind === 'unsupported-media-type') {
      return answers.finish(
        request,
        reply,
        plainFailure({ binding: soapBindingOf(request), group, requestBody }, 415, parsed.text),
      );
    }
    const binding = bindingOfSoapVersion(parsed.version);
    if (!parsed.ok) {
      return answers.finish(request, reply, {
        binding,
        group: group.name,
        operation: parsed.operation?.name ?? null,
        params: null,
        requestBody,
        outcome: 'client-error',
        status: 500,
        error: parsed.text,
        headers: { 'content-type': soapContentType(parsed.version), 'cache-control': FAULT_CACHE },
        body: faultEnvelope(parsed.version, parsed.code, parsed.text),
      });
    }
    const { params } = parsed;
    const ex = await answers.perform(
      { binding, group, requestBody },
      parsed.operation,
      (n) => params.get(n),
      request,
    );
    // SOAP faults travel with status 500 whatever the HTTP bindings would have said.
    return answers.finish(request, reply, ex.outcome === 'ok' ? ex : { ...ex, status: 500 });
  });
}
