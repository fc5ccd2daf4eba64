import { problemSchema, schoolInputSchema, schoolSchema } from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { changes } from '../../auth/audit-diff.js';
import { problem, sendProblem } from '../../http/problem.js';
import { allowedIpsColumn, normalizeBaseUrl } from '../../operations/schools.js';
import { type SchoolRow, uniqueViolation } from '../../store/index.js';
import { toSchool } from './row-mapping.js';

const idParams = z.object({ id: z.coerce.number().int().positive() });

/** Whether a write broke a school's unique base URL or topic key: a 409, not a fault. */
function isSchoolClash(err: unknown): boolean {
  const constraint = uniqueViolation(err);
  return constraint === 'schools_base_url_key' || constraint === 'schools_topic_key_key';
}

type SchoolValues = ReturnType<typeof schoolValues>;

function schoolValues(input: z.output<typeof schoolInputSchema>) {
  return {
    name: input.name,
    base_url: normalizeBaseUrl(input.baseUrl) ?? input.baseUrl,
    topic_key: input.topicKey,
    allowed_ips: allowedIpsColumn(input.allowedIps),
  };
}

/**
 * The 409's detail: which school holds the base URL, which the topic key. The database names only
 * the first constraint a write broke, so both are looked for; neither found means the school that
 * held it has gone meanwhile.
 */
function conflictDetail(values: SchoolValues, byUrl: SchoolRow | undefined, byTopic: SchoolRow | undefined) {
  const url = `this base URL (${values.base_url})`;
  const topic = `this topic key (${values.topic_key})`;
  if (byUrl && byTopic && byUrl.id === byTopic.id) return `${byUrl.name} already has ${url} and ${topic}.`;
  if (byUrl && byTopic) return `${byUrl.name} already has ${url}, and ${byTopic.name} ${topic}.`;
  if (byUrl) return `${byUrl.name} already has ${url}.`;
  if (byTopic) return `${byTopic.name} already has ${topic}: choose another.`;
  return 'Another school already has that base URL or topic key.';
}

/** The schools the operations serve: admins only (the scope's rule). */
export const schoolRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store } = app;

  /** A 409 naming what clashed (the base URL, the topic key or both) and with which school. */
  const schoolConflict = async (reply: FastifyReply, values: SchoolValues, self?: number) => {
    const other = (row: SchoolRow | undefined) => (row && row.id !== self ? row : undefined);
    const [byUrl, byTopic] = await Promise.all([
      store.schools.findByBaseUrl(values.base_url).then(other),
      store.schools.findByTopicKey(values.topic_key).then(other),
    ]);
    const errors: Record<string, string> = {};
    if (byUrl) errors.baseUrl = `${byUrl.name} already has this base URL.`;
    if (byTopic) errors.topicKey = `${byTopic.name} already has this topic key: choose another.`;
    return sendProblem(reply, problem(409, conflictDetail(values, byUrl, byTopic), { errors }));
  };

  app.get(
    '/schools',
    { schema: { summary: 'List schools', tags: ['schools'], response: { 200: z.array(schoolSchema) } } },
    async () => (await store.schools.list()).map(toSchool),
  );
  app.post(
    '/schools',
    {
      schema: {
        summary: 'Register a school',
        tags: ['schools'],
        body: schoolInputSchema,
        response: { 201: schoolSchema, 400: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      try {
        const school = toSchool(await store.schools.create(schoolValues(request.body)));
        await app.audit(request, {
          action: 'school-create',
          target: `school ${school.id} (${school.name})`,
          details: changes(undefined, school),
        });
        return reply.code(201).send(school);
      } catch (err) {
        if (isSchoolClash(err)) {
          return schoolConflict(reply, schoolValues(request.body));
        }
        throw err;
      }
    },
  );
  app.put(
    '/schools/:id',
    {
      schema: {
        summary: 'Change a school',
        tags: ['schools'],
        params: idParams,
        body: schoolInputSchema,
        response: { 200: schoolSchema, 400: problemSchema, 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      try {
        const before = await store.schools.findById(request.params.id);
        const row = before && (await store.schools.update(before.id, schoolValues(request.body)));
        if (!before || !row)
          return sendProblem(reply, problem(404, `There is no school ${request.params.id}.`));
        const school = toSchool(row);
        await app.audit(request, {
          action: 'school-update',
          target: `school ${school.id} (${school.name})`,
          details: changes(toSchool(before), school),
        });
        return school;
      } catch (err) {
        if (isSchoolClash(err)) {
          return schoolConflict(reply, schoolValues(request.body), request.params.id);
        }
        throw err;
      }
    },
  );
  app.delete(
    '/schools/:id',
    {
      schema: {
        summary: 'Remove a school',
        tags: ['schools'],
        params: idParams,
        response: { 404: problemSchema },
      },
    },
    async (request, reply) => {
      const before = await store.schools.findById(request.params.id);
      if (!before || !(await store.schools.remove(before.id))) {
        return sendProblem(reply, problem(404, `There is no school ${request.params.id}.`));
      }
      await app.audit(request, {
        action: 'school-delete',
        target: `school ${before.id} (${before.name})`,
        details: changes(toSchool(before), {}),
      });
      return (reply as FastifyReply).code(204).send();
    },
  );
};
