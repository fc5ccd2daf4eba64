import {
  isValidRegion,
  nationalAsInternational,
  type OperationDef,
  operationInputSchema,
  type ParamDef,
} from '@school/contract';
import { type ReactNode, useEffect, useId, useMemo } from 'react';
import { useFormContext, useWatch } from 'react-hook-form';
import { Link } from 'react-router';
import { z } from 'zod';
import { Form, SelectField, TextField } from '../../../components/ui/form';
import { paths } from '../../../config/paths';
import { ProblemError } from '../../../lib/api-client';
import { clearDraft, KeepDraft } from '../../../lib/draft';
import { useServiceInfo } from '../../../lib/service-info';
import { isOrganisationAdmin, useSession } from '../../../lib/session';
import { useSendSchools } from '../api/get-send-schools';
import { useSendOperation } from '../api/send-operation';
import { phoneExampleFor, sharedCallingCodeNote } from '../utils/phone-hints';
import { Outcome } from './outcome';
import { SendingState } from './sending-state';
import { ShowAs } from './show-as';

/** What staff call each parameter; the wire name is shown beside it. By operation, then by name. */
const PARAM_LABELS: Readonly<Record<string, string>> = {
  code: 'Verification code',
  phone: 'Phone number',
  termId: 'Term',
  srid: 'Student registration id',
  classId: 'Class',
  'SendNotificationType.id': 'Item id',
  'SendMarkNotes.id': 'Marks entry id',
  id_class: 'Class',
  baseUrlSchool: 'School base URL',
  TypeNotfication: 'Notification type',
};

function label(op: OperationDef, param: ParamDef): ReactNode {
  const human = PARAM_LABELS[`${op.name}.${param.name}`] ?? PARAM_LABELS[param.name];
  if (!human) return param.name;
  return (
    <>
      {human} <span className="muted">({param.name})</span>
    </>
  );
}

function describe(
  param: ParamDef,
  region: string | undefined,
  allowed: readonly string[] | null | undefined,
): ReactNode {
  const parts = [param.description];
  if (param.rule === 'phone' && region) {
    parts.push(`A national number is read as a number of ${region}.`);
    // A national number of Jersey reads as GB's, and is refused unless Jersey is allowed.
    const shared = sharedCallingCodeNote(region, allowed);
    if (shared) parts.push(shared);
  }
  if (param.secret) parts.push('Masked (***) in the history.');
  if (param.rule === 'phone' && !region) {
    return (
      <>
        {parts.join(' ')} <PhoneSuggestion name={param.name} />
      </>
    );
  }
  if (param.name === 'baseUrlSchool') {
    return (
      <>
        {parts.join(' ')} <RegisterSchool />
      </>
    );
  }
  return parts.join(' ');
}

/** The region of the browser's language (`en-GB` → `GB`), to read a national number in. */
function browserRegion(): string | undefined {
  const tag = typeof navigator === 'undefined' ? undefined : navigator.language;
  try {
    return tag ? new Intl.Locale(tag).maximize().region : undefined;
  } catch {
    return undefined;
  }
}

/**
 * With no DEFAULT_PHONE_REGION on the server, a number typed as staff say it (`07400 123456`)
 * cannot be read: offer it in international form, read in the browser's region, to take with one
 * click, rather than only refusing it. Nothing is sent until staff take it.
 */
function PhoneSuggestion({ name }: { name: string }) {
  const { setValue } = useFormContext();
  const typed = useWatch({ name }) as string | undefined;
  const region = browserRegion();
  const suggestion = typed && region ? nationalAsInternational(typed, region) : undefined;
  if (!suggestion) return null;
  return (
    <span className="phone-suggestion">
      Did you mean{' '}
      <button
        type="button"
        className="button button-small"
        onClick={() => setValue(name, suggestion.replace(/\s/g, ''), { shouldValidate: true })}
      >
        {suggestion}
      </button>
      ?
    </span>
  );
}

/** Where an unknown school gets registered: for an admin, a link that starts it with the URL typed. */
function RegisterSchool() {
  const session = useSession();
  const typed = (useWatch({ name: 'baseUrlSchool' }) as string | undefined)?.trim();
  if (!isOrganisationAdmin(session.data)) return <>An admin registers schools on the Schools page.</>;
  const href = typed
    ? `${paths.schools.href()}?${new URLSearchParams({ baseUrl: typed })}`
    : paths.schools.href();
  return (
    <>
      Not registered yet? <Link to={href}>Register it on the Schools page</Link>.
    </>
  );
}

/** The form's field for the school a call is for (`schoolId` in the API's body), beside the parameters. */
const SCHOOL = 'schoolId';

/**
 * A user with one school has it filled in: the School select of an operation that names no school,
 * the school's URL in one that does (when nothing is typed yet).
 */
function PreselectSchool({
  only,
  field,
}: {
  only: { readonly id: number; readonly baseUrl: string } | undefined;
  field: typeof SCHOOL | 'baseUrlSchool' | undefined;
}) {
  const { getValues, setValue } = useFormContext();
  useEffect(() => {
    if (!only || !field || getValues(field)) return;
    setValue(field, field === SCHOOL ? String(only.id) : only.baseUrl);
  }, [only, field, getValues, setValue]);
  return null;
}

/**
 * One operation's form. The fields, their descriptions and their rules all come from the
 * contract's table, with the server's default phone region (GET /api/service), so the console
 * refuses exactly what the server would refuse. Until the region is known, a phone must be
 * international: that is never wrong, only stricter.
 */
export function OperationForm({ op }: { op: OperationDef }) {
  const service = useServiceInfo();
  const configured = service.data?.defaultPhoneRegion ?? undefined;
  const region = configured && isValidRegion(configured) ? configured : undefined;
  const allowed = service.data?.smsDestinations.allowedCountries;
  // A phone this server sends codes to: the example shown and filled in works when sent.
  const phoneExample = phoneExampleFor(region, allowed);
  const exampleOf = (param: ParamDef) => (param.rule === 'phone' ? phoneExample : param.example);
  // Worded for the person at the form; the wire keeps its own wording.
  // The schools one may send for: offered in the school URL field, or in the School select of an
  // operation that names no school (which school it is for; required of a user limited to schools).
  const sendSchools = useSendSchools().data;
  const schools = sendSchools?.items ?? [];
  const limited = sendSchools?.organisationWide === false;
  const takesSchool = op.params.some((p) => p.name === 'baseUrlSchool');
  const schema = useMemo(() => {
    const params = operationInputSchema(op, { defaultPhoneRegion: region, wording: 'staff' });
    if (takesSchool) return params;
    return params.extend({
      [SCHOOL]: limited ? z.string().min(1, 'Pick the school this is for.') : z.string(),
    });
  }, [op, region, takesSchool, limited]);
  const defaultValues = useMemo(
    () => ({
      ...Object.fromEntries(op.params.map((p) => [p.name, ''])),
      ...(takesSchool ? {} : { [SCHOOL]: '' }),
    }),
    [op, takesSchool],
  );
  const send = useSendOperation();
  const schoolsListId = useId();
  const only = limited && schools.length === 1 ? schools[0] : undefined;
  const schoolOptions = [
    ...(limited && schools.length === 1
      ? []
      : [{ value: '', label: limited ? 'Pick a school' : 'No particular school' }]),
    ...schools.map((s) => ({ value: String(s.id), label: s.name })),
  ];
  // What is typed is kept in this tab until sent (a session that ends under way loses nothing);
  // never a secret such as the auth code.
  const draftKey = `send:${op.name}`;
  const secrets = useMemo(() => op.params.filter((p) => p.secret).map((p) => p.name), [op]);

  return (
    <Form
      schema={schema}
      options={{ defaultValues }}
      aria-labelledby="operation-heading"
      className="operation-form"
      onSubmit={(submitted, methods) => {
        const { [SCHOOL]: picked, ...values } = submitted as Record<string, string>;
        send.mutate(
          { operation: op.name, values, ...(picked ? { schoolId: Number(picked) } : {}) },
          {
            onSuccess: () => clearDraft(draftKey),
            onError: (error) => {
              // The server names the parameter it refused: show its message under that field.
              const errors = error instanceof ProblemError ? error.problem.errors : undefined;
              for (const [name, message] of Object.entries(errors ?? {})) {
                if (name === SCHOOL || op.params.some((p) => p.name === name)) {
                  methods.setError(name, { type: 'server', message });
                }
              }
            },
          },
        );
      }}
    >
      {(methods) => (
        <>
          <SendingState operation={op.name} />
          <KeepDraft key={draftKey} draftKey={draftKey} exclude={secrets} />
          <PreselectSchool only={only} field={takesSchool ? 'baseUrlSchool' : SCHOOL} />
          {takesSchool ? null : (
            <SelectField
              name={SCHOOL}
              label="School"
              description={
                limited
                  ? 'Which of your schools this is for: the call is theirs, and their staff see it.'
                  : 'Which school this is for, if one: the call is theirs, and their staff see it too.'
              }
              options={schoolOptions}
            />
          )}
          {op.params.length === 0 ? (
            <p>This operation takes no parameters.</p>
          ) : (
            op.params.map((param) => (
              <TextField
                key={param.name}
                name={param.name}
                label={label(op, param)}
                description={describe(param, region, allowed)}
                placeholder={exampleOf(param) && `e.g. ${exampleOf(param)}`}
                autoComplete="off"
                spellCheck={false}
                {...(param.name === 'baseUrlSchool' && schools.length > 0 ? { list: schoolsListId } : {})}
              />
            ))
          )}
          {schools.length > 0 ? (
            // The registered schools to pick from; another URL can still be typed.
            <datalist id={schoolsListId}>
              {schools.map((school) => (
                <option key={school.id} value={school.baseUrl}>
                  {school.name}
                </option>
              ))}
            </datalist>
          ) : null}
          <div className="actions">
            <button type="submit" className="button button-primary" disabled={send.isPending}>
              {send.isPending ? 'Sending…' : 'Send'}
            </button>
            {op.params.length > 0 ? (
              <button
                type="button"
                className="button"
                onClick={() => {
                  for (const p of op.params)
                    methods.setValue(p.name, exampleOf(p) ?? '', { shouldValidate: true });
                }}
              >
                Fill with examples
              </button>
            ) : null}
          </div>
          <Outcome operation={op.name} result={send.data} error={send.error} pending={send.isPending} />
          <ShowAs op={op} />
        </>
      )}
    </Form>
  );
}
