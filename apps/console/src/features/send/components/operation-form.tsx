import {
  isValidRegion,
  nationalAsInternational,
  type OperationDef,
  operationInputSchema,
  type ParamDef,
} from '@school/contract';
import { type ReactNode, useId, useMemo } from 'react';
import { useFormContext, useWatch } from 'react-hook-form';
import { Link } from 'react-router';
import { Form, TextField } from '../../../components/ui/form';
import { paths } from '../../../config/paths';
import { ProblemError } from '../../../lib/api-client';
import { clearDraft, KeepDraft } from '../../../lib/draft';
import { useSchools } from '../../../lib/schools';
import { useServiceInfo } from '../../../lib/service-info';
import { useSession } from '../../../lib/session';
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
  if (session.data?.user.role !== 'admin') return <>An admin registers schools on the Schools page.</>;
  const href = typed
    ? `${paths.schools.href()}?${new URLSearchParams({ baseUrl: typed })}`
    : paths.schools.href();
  return (
    <>
      Not registered yet? <Link to={href}>Register it on the Schools page</Link>.
    </>
  );
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
  const schema = useMemo(
    () => operationInputSchema(op, { defaultPhoneRegion: region, wording: 'staff' }),
    [op, region],
  );
  const defaultValues = useMemo(() => Object.fromEntries(op.params.map((p) => [p.name, ''])), [op]);
  const send = useSendOperation();
  // Admins may list the schools: the school field offers them (operators type the URL).
  const isAdmin = useSession().data?.user.role === 'admin';
  const takesSchool = op.params.some((p) => p.name === 'baseUrlSchool');
  const schools = useSchools({ enabled: isAdmin && takesSchool }).data ?? [];
  const schoolsListId = useId();
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
      onSubmit={(values, methods) => {
        send.mutate(
          { operation: op.name, values },
          {
            onSuccess: () => clearDraft(draftKey),
            onError: (error) => {
              // The server names the parameter it refused: show its message under that field.
              const errors = error instanceof ProblemError ? error.problem.errors : undefined;
              for (const [name, message] of Object.entries(errors ?? {})) {
                if (op.params.some((p) => p.name === name)) {
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
