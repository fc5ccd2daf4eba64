import {
  missingTemplatesSchema,
  problemSchema,
  TEMPLATE_MATCH_RULE,
  templateInputSchema,
  templateSchema,
  unknownPlaceholders,
  unknownPlaceholdersMessage,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { changes } from '../../auth/audit-diff.js';
import { problem, sendProblem } from '../../http/problem.js';
import { type Store, type TemplateRow, uniqueViolation } from '../../store/index.js';
import { toTemplate } from './row-mapping.js';

const idParams = z.object({ id: z.coerce.number().int().positive() });

/** Types received without a template: the calls of this many days back… */
const MISSING_TEMPLATE_DAYS = 30;
/** …at most this many of them, the newest (a bound on the work, however long the history). */
const MISSING_TEMPLATE_CALLS = 5000;
/** The types listed, most sent first. */
const MISSING_TEMPLATE_TYPES = 50;

/**
 * Whether a write broke a template's unique type, as written or as matched (its key): another
 * template saved meanwhile answers it.
 */
function isTemplateClash(err: unknown): boolean {
  const constraint = uniqueViolation(err);
  return constraint === 'templates_type_key' || constraint === 'templates_by_type_key';
}

/** The 409's message: the template that already answers `type` (types match whatever their case). */
function conflictMessage(type: string, existing: TemplateRow | undefined): string {
  if (!existing) return 'There is already a template for that type.';
  if (existing.type === type) return `There is already a template for ${type}: edit that one.`;
  return `The ${existing.type} template already answers ${type}: types match whatever their case and surrounding spaces. Edit that one.`;
}

/** A 400 when the title or body uses placeholders the server does not fill. */
function placeholderProblem(reply: FastifyReply, input: { title: string; body: string }) {
  const errors: Record<string, string> = {};
  for (const field of ['title', 'body'] as const) {
    const unknown = unknownPlaceholders(input[field]);
    if (unknown.length > 0) errors[field] = unknownPlaceholdersMessage(unknown);
  }
  const fields = Object.entries(errors);
  if (fields.length === 0) return undefined;
  const detail = fields.map(([field, message]) => `In the ${field}: ${message}`).join(' ');
  return sendProblem(reply, problem(400, detail, { errors }));
}

/** A 409 naming the template that already answers the type. */
function templateConflict(reply: FastifyReply, type: string, existing: TemplateRow | undefined) {
  const message = conflictMessage(type, existing);
  return sendProblem(reply, problem(409, message, { errors: { type: message } }));
}

/** The template that would answer `type`, other than `self` (the one being saved). */
async function otherOfType(store: Store, type: string, self?: number) {
  const found = await store.templates.findByType(type);
  return found && found.id !== self ? found : undefined;
}

/** The types of the last days' notifications that no template answers, most sent first. */
async function missingTemplates(store: Store) {
  const since = Date.now() - MISSING_TEMPLATE_DAYS * 86_400_000;
  const { scanned, types } = await store.templates.typesWithoutTemplate({
    since,
    limit: MISSING_TEMPLATE_CALLS,
  });
  return {
    since: new Date(since).toISOString(),
    limit: MISSING_TEMPLATE_CALLS,
    scanned,
    limited: scanned >= MISSING_TEMPLATE_CALLS,
    types: types.slice(0, MISSING_TEMPLATE_TYPES).map((t) => ({
      type: t.type,
      spellings: [...t.spellings],
      count: t.count,
      lastSeenAt: new Date(t.lastSeenAt).toISOString(),
    })),
    more: Math.max(0, types.length - MISSING_TEMPLATE_TYPES),
  };
}

/** Notification templates, as SendNotificationType fills them: admins only (the scope's rule). */
export const templateRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store } = app;

  const sameType = (type: string, self?: number) => otherOfType(store, type, self);

  app.get(
    '/templates',
    {
      schema: {
        summary: 'List notification templates',
        description: TEMPLATE_MATCH_RULE,
        tags: ['templates'],
        response: { 200: z.array(templateSchema) },
      },
    },
    async () => (await store.templates.list()).map(toTemplate),
  );
  app.get(
    '/templates/missing',
    {
      schema: {
        summary: 'Notification types received that no template answers',
        description: `Types sent by successful SendNotificationType calls of the last ${MISSING_TEMPLATE_DAYS} days (the newest ${MISSING_TEMPLATE_CALLS} calls at most) that no template matches, so that they got the generic template (*): the ${MISSING_TEMPLATE_TYPES} most sent, each with how it was spelt, how often and when last. ${TEMPLATE_MATCH_RULE}`,
        tags: ['templates'],
        response: { 200: missingTemplatesSchema },
      },
    },
    () => missingTemplates(store),
  );
  app.post(
    '/templates',
    {
      schema: {
        summary: 'Add a template for a notification type',
        description: `${TEMPLATE_MATCH_RULE} A type that differs from an existing template's only so is a 409; a placeholder other than the known ones is a 400.`,
        tags: ['templates'],
        body: templateInputSchema,
        response: { 201: templateSchema, 400: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const refused = placeholderProblem(reply, request.body);
      if (refused) return refused;
      const existing = await sameType(request.body.type);
      if (existing) return templateConflict(reply, request.body.type, existing);
      try {
        const template = toTemplate(await store.templates.create(request.body));
        await app.audit(request, {
          action: 'template-create',
          target: `template ${template.id} (${template.type})`,
          details: changes(undefined, template),
        });
        return reply.code(201).send(template);
      } catch (err) {
        if (isTemplateClash(err))
          return templateConflict(reply, request.body.type, await sameType(request.body.type));
        throw err;
      }
    },
  );
  app.put(
    '/templates/:id',
    {
      schema: {
        summary: 'Change a template',
        description: `${TEMPLATE_MATCH_RULE} A type another template already answers is a 409; a placeholder other than the known ones is a 400.`,
        tags: ['templates'],
        params: idParams,
        body: templateInputSchema,
        response: { 200: templateSchema, 400: problemSchema, 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      try {
        const current = await store.templates.findById(request.params.id);
        if (current?.type === '*' && request.body.type !== '*') {
          return sendProblem(reply, problem(409, 'The generic template (*) keeps its type.'));
        }
        const refused = current && placeholderProblem(reply, request.body);
        if (refused) return refused;
        const existing = current && (await sameType(request.body.type, current.id));
        if (existing) return templateConflict(reply, request.body.type, existing);
        const row = current && (await store.templates.update(current.id, request.body));
        if (!current || !row)
          return sendProblem(reply, problem(404, `There is no template ${request.params.id}.`));
        const template = toTemplate(row);
        await app.audit(request, {
          action: 'template-update',
          target: `template ${template.id} (${template.type})`,
          details: changes(toTemplate(current), template),
        });
        return template;
      } catch (err) {
        if (isTemplateClash(err))
          return templateConflict(
            reply,
            request.body.type,
            await sameType(request.body.type, request.params.id),
          );
        throw err;
      }
    },
  );
  app.delete(
    '/templates/:id',
    {
      schema: {
        summary: 'Remove a template',
        description: 'Its type then gets the generic template (*), which cannot be removed.',
        tags: ['templates'],
        params: idParams,
        response: { 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const current = await store.templates.findById(request.params.id);
      if (!current) return sendProblem(reply, problem(404, `There is no template ${request.params.id}.`));
      if (current.type === '*')
        return sendProblem(reply, problem(409, 'The generic template (*) cannot be removed.'));
      await store.templates.remove(current.id);
      await app.audit(request, {
        action: 'template-delete',
        target: `template ${current.id} (${current.type})`,
        details: changes(toTemplate(current), {}),
      });
      return (reply as FastifyReply).code(204).send();
    },
  );
};
