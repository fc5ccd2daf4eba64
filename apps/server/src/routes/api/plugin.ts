import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
} from 'fastify-type-provider-zod';
import { withAccess } from '../../auth/plugin.js';
import { problem, sendProblem, unavailableDetail } from '../../http/problem.js';
import { BusyError } from '../../plugins/request-limits.js';
import { isDiskFullError, isUnavailableError } from '../../store/index.js';
import { accountRoutes } from './account.js';
import { auditRoutes } from './audit.js';
import { bookRoutes } from './books.js';
import { callRoutes } from './calls.js';
import { deliveryRoutes } from './deliveries.js';
import { operationRoutes } from './operations.js';
import { privacyRoutes } from './privacy.js';
import { schoolRoutes } from './schools.js';
import { serviceRoutes } from './service.js';
import { sessionRoutes } from './session.js';
import { setupRoutes } from './setup.js';
import { ssoRoutes } from './sso.js';
import { statsRoutes } from './stats.js';
import { templateRoutes } from './templates.js';
import { userRoutes } from './users.js';

/**
 * The console's JSON API under /api: schema-first routes (zod, shared with the console through
 * @school/contract), an OpenAPI document generated from them, and RFC 9457 problems for errors.
 */
export const apiRoutes: FastifyPluginAsync = async (app) => {
  // Every API route that changes state takes requests from the console's own page only
  // (docs/security.md#cross-site-requests-host-names-and-headers); the rule reads this, not the URL.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, consoleOnly: true };
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'School Messaging and Book Service — console API',
        description:
          'The JSON API of the staff console. The school-facing operations themselves are the .asmx endpoints (SOAP 1.1/1.2, HTTP GET/POST); see their WSDL.',
        version: '1.0.0',
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(
    // indexPrefix: swagger-ui does not see this plugin's /api prefix, and without it the page at
    // /api/docs (no trailing slash) asks for its assets at /docs/static/… (a blank page).
    // BaseLayout: the standalone layout's top bar draws an SVG logo with an inline <style>, which
    // the console's CSP (no inline style) blocks; its "Explore" box, for loading other documents,
    // is of no use here. Without it the page needs nothing inline and keeps the console's policy.
    withAccess('operator', async (docs) => {
      // A browser opening the documentation without a session is sent to log in, and back here.
      docs.addHook('onRoute', (route) => {
        route.config = { ...route.config, loginPage: true };
      });
      await docs.register(swaggerUi, {
        routePrefix: '/docs',
        indexPrefix: '/api',
        uiConfig: { layout: 'BaseLayout', deepLinking: true },
      });
    }),
  );
  app.get('/openapi.json', { config: { access: 'operator' }, schema: { hide: true } }, () => app.swagger());

  // The id the request is logged and recorded under, for whoever reports a problem to quote. Only
  // here: the .asmx answers' headers are byte-exact (docs/wire-contract.md).
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      const errors: Record<string, string> = {};
      for (const issue of error.validation) {
        const field = issue.instancePath.replace(/^\//, '').replace(/\//g, '.');
        errors[field || error.validationContext || 'request'] ??= issue.message ?? 'is invalid';
      }
      const fields = Object.entries(errors).map(([k, v]) => `${k}: ${v}`);
      return sendProblem(reply, problem(400, `The request is invalid. ${fields.join('; ')}`, { errors }));
    }
    if (error instanceof BusyError) {
      return sendProblem(
        reply.header('retry-after', '5').header('connection', 'close'),
        problem(503, error.message),
      );
    }
    // The database away or the disk full: try again, not a fault of the server's own.
    if (isUnavailableError(error)) {
      return sendProblem(
        reply.header('retry-after', '5'),
        problem(503, unavailableDetail(isDiskFullError(error) ? 'disk' : 'database')),
      );
    }
    const status =
      error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) {
      request.log.error({ err: error }, 'unexpected error in the API');
      return sendProblem(reply, problem(500, `An internal error occurred (request ${request.id}).`));
    }
    return sendProblem(reply, problem(status, error.message));
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      problem(404, `There is no ${request.method} ${request.url.split('?')[0]} in the API.`),
    ),
  );

  // Who may call what (docs/security.md): each group of routes has its rule here; a route may
  // still set its own (the session, account and set-up routes do, route by route).
  await app.register(sessionRoutes);
  await app.register(accountRoutes);
  await app.register(setupRoutes);
  await app.register(ssoRoutes);
  await app.register(withAccess('operator', operationRoutes));
  await app.register(withAccess('operator', callRoutes));
  await app.register(withAccess('operator', serviceRoutes));
  await app.register(withAccess('operator', statsRoutes));
  await app.register(withAccess('operator', deliveryRoutes));
  await app.register(withAccess('admin', schoolRoutes));
  await app.register(withAccess('admin', templateRoutes));
  await app.register(withAccess('admin', bookRoutes));
  await app.register(withAccess('admin', userRoutes));
  await app.register(withAccess('operator', auditRoutes));
  await app.register(withAccess('admin', privacyRoutes));
};
