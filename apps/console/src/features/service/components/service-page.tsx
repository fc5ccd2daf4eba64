import type { ProviderInfo, ServiceInfo } from '@school/contract';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ErrorState, Loading } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { paths } from '../../../config/paths';
import { formatBytes } from '../../../lib/format';
import { REFUSAL_REMEDY, useRefusalWords } from '../../../lib/provider-refusal';
import { getServiceInfoQueryOptions } from '../../../lib/service-info';
import '../service.css';

/** How often the providers' state is read again while the page is open (ms). */
const FOLLOW_MS = 15_000;

export function ServicePage() {
  // The providers' state changes as they answer: followed, not kept for the addresses' 5 minutes.
  const service = useQuery({
    ...getServiceInfoQueryOptions(),
    staleTime: FOLLOW_MS,
    refetchInterval: FOLLOW_MS,
  });
  return (
    <div className="page service-page">
      <title>Service · School Messaging</title>
      <h1>Service</h1>
      {service.isPending ? (
        <Loading>Loading the service description…</Loading>
      ) : service.isError ? (
        <ErrorState
          error={service.error}
          title="Could not load the service"
          onRetry={() => service.refetch()}
        />
      ) : (
        <ServiceView info={service.data} />
      )}
    </div>
  );
}

function ServiceView({ info }: { info: ServiceInfo }) {
  const { storage } = info;
  return (
    <>
      {storage.full ? (
        <div className="status status-error" role="alert">
          <p className="status-title">The disk is full: calls are refused</p>
          <p>
            A write found no room left where the history is kept (
            {storage.freeBytes === null ? 'an unknown amount' : formatBytes(storage.freeBytes)} free). New
            calls are refused (callers are told to try again later) until space is freed; what was already
            accepted is still sent. Free some space: calls are taken again within seconds.
          </p>
        </div>
      ) : storage.refusingCalls ? (
        <div className="status status-error" role="alert">
          <p className="status-title">The disk is nearly full: calls are refused</p>
          <p>
            Only {storage.freeBytes === null ? 'an unknown amount' : formatBytes(storage.freeBytes)} is free
            where the history is kept. Below {formatBytes(storage.refuseFreeBytes)} the service refuses new
            calls (callers are told to try again later) so that what was already accepted is still sent. Free
            some space: calls are taken again within seconds.
          </p>
        </div>
      ) : storage.rawBodiesStored ? null : (
        <div className="status status-error" role="alert">
          <p className="status-title">Free disk space is low</p>
          <p>
            Only {storage.freeBytes === null ? 'an unknown amount' : formatBytes(storage.freeBytes)} is free
            where the history is kept (the minimum is {formatBytes(storage.minFreeBytes)}). Calls are still
            recorded, but without their request and response bodies, until space is freed.
          </p>
        </div>
      )}
      <dl className="summary">
        <dt>Namespace</dt>
        <dd>
          <code>{info.namespace}</code>
        </dd>
        <dt>Base URL</dt>
        <dd>
          <code>{info.baseUrl}</code>
        </dd>
        <dt>Free disk space</dt>
        <dd>{storage.freeBytes === null ? 'Unknown' : formatBytes(storage.freeBytes)}</dd>
        <dt>For integrators</dt>
        <dd>
          {/* Served by the server, not a console page: a plain link, in a tab of its own. */}
          <a href={paths.apiDocs} target="_blank" rel="noopener">
            The console’s JSON API, for developers (OpenAPI, opens in a new tab)
          </a>
        </dd>
      </dl>
      <Providers providers={info.providers} />
      <SmsDestinations destinations={info.smsDestinations} />
      {info.groups.length === 0 ? <p>The service lists no endpoints.</p> : null}
      {info.groups.map((group) => (
        <section key={group.name} className="card" aria-labelledby={`group-${group.name}`}>
          <h2 id={`group-${group.name}`}>{group.title}</h2>
          <p>
            <code className="endpoint">{group.url}</code>
          </p>
          <ul className="links">
            <li>
              <a href={group.wsdl}>
                WSDL <span className="visually-hidden">of {group.name}</span>
              </a>
            </li>
            <li>
              <a href={group.help}>
                Help page <span className="visually-hidden">of {group.name}</span>
              </a>
            </li>
          </ul>
          <div className="table-wrap">
            <table className="operations cards">
              <caption className="visually-hidden">Operations of {group.title}</caption>
              <thead>
                <tr>
                  <th scope="col">Operation</th>
                  <th scope="col">Parameters</th>
                  <th scope="col">Links</th>
                </tr>
              </thead>
              <tbody>
                {group.operations.map((op) => (
                  <tr key={op.name}>
                    <td data-label="Operation">
                      <code>{op.name}</code>
                      <p className="muted">{op.summary}</p>
                    </td>
                    <td data-label="Parameters">
                      {op.params.length === 0 ? (
                        <span className="muted">none</span>
                      ) : (
                        <ul className="params">
                          {op.params.map((p) => (
                            <li key={p.name}>
                              <code>{p.name}</code>: {p.description}
                            </li>
                          ))}
                        </ul>
                      )}
                    </td>
                    <td data-label="Links">
                      <ul className="links">
                        <li>
                          <a href={op.help}>
                            Help <span className="visually-hidden">for {op.name}</span>
                          </a>
                        </li>
                        <li>
                          <Link to={paths.send.href(op.name)}>
                            Send <span className="visually-hidden">{op.name}</span>
                          </Link>
                        </li>
                      </ul>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      ))}
    </>
  );
}

const CHANNELS = [
  { key: 'sms', label: 'SMS', what: 'texts', variable: 'SMS_PROVIDER' },
  { key: 'smsFallback', label: 'SMS fallback', what: 'texts', variable: 'SMS_FALLBACK_PROVIDER' },
  { key: 'push', label: 'Push', what: 'pushes', variable: 'PUSH_PROVIDER' },
] as const;

/**
 * A provider as staff read it: refusing the school's messages (from what it answered, on every
 * instance), else its circuit — is it being sent to, and if not, what happens instead.
 */
function ProviderState({ provider, hasFallback }: { provider: ProviderInfo; hasFallback: boolean }) {
  const words = useRefusalWords();
  const { state, since } = provider.circuit;
  if (provider.refusing) {
    return (
      <>
        <span className="badge badge-server-error">Refusing</span>
        <p className="provider-warning">
          Refusing: {words(provider.refusing)}. {REFUSAL_REMEDY}
          {hasFallback ? ' Meanwhile each message it refuses is sent by the other SMS provider.' : ''}
          {state === 'open' ? ' Its circuit is open too: nothing is sent to it for a while.' : ''}
        </p>
      </>
    );
  }
  if (state === 'closed') return <span className="badge badge-ok">Working</span>;
  return (
    <>
      <span className={`badge ${state === 'open' ? 'badge-server-error' : 'badge-client-error'}`}>
        {state === 'open' ? 'Failing: paused' : 'Being tried again'}
      </span>
      <p className="provider-warning">
        {state === 'open'
          ? `It failed repeatedly, so nothing is sent to it for a while${hasFallback ? ': its messages go to the other SMS provider' : ': its messages wait'}. It is tried again by itself.`
          : 'A few messages are sent to it to see whether it works again.'}{' '}
        <span className="muted">
          Since <Timestamp iso={since} />
        </span>
      </p>
    </>
  );
}

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });

/**
 * Where AuthCode sends codes (docs/security.md#sms-pumping): the countries allowed and the kinds
 * of number, with a warning when every country is, since the endpoint is open to anyone.
 */
function SmsDestinations({ destinations }: { destinations: ServiceInfo['smsDestinations'] }) {
  const countries = destinations.allowedCountries;
  return (
    <section className="card" aria-labelledby="destinations-heading">
      <h2 id="destinations-heading">Where login codes are sent</h2>
      {countries === null ? (
        <div className="status status-warning" role="status">
          <p className="status-title">Every country is allowed</p>
          <p>
            Anyone who finds the AuthCode address can make the service send SMS to any country, paid for by
            the school (“SMS pumping”). Set <code>SMS_ALLOWED_COUNTRIES</code> (or{' '}
            <code>DEFAULT_PHONE_REGION</code>) to the countries of your parents’ phones.
          </p>
        </div>
      ) : null}
      <dl className="summary">
        <dt>Countries</dt>
        <dd>
          {countries === null
            ? 'Every country'
            : countries.map((c) => `${regionNames.of(c) ?? c} (${c})`).join(', ')}
        </dd>
        <dt>Numbers</dt>
        <dd>
          {destinations.fixedLines ? 'Mobiles and landlines' : 'Mobiles only (landlines are refused)'}. Never
          premium-rate, shared-cost, toll-free, voicemail, pager or international-network numbers.
        </dd>
        <dt>Per range</dt>
        <dd>
          A limit per block of 1 000 consecutive numbers stops a caller walking through a range (
          <code>AUTHCODE_LIMIT_PER_RANGE</code>).
        </dd>
      </dl>
    </section>
  );
}

/** The providers deliveries go through; `log` means nothing leaves the machine, said plainly. */
function Providers({ providers }: { providers: ServiceInfo['providers'] }) {
  return (
    <section className="card" aria-labelledby="providers-heading">
      <h2 id="providers-heading">Providers</h2>
      <div className="table-wrap">
        <table className="providers cards">
          <caption className="visually-hidden">Providers in use</caption>
          <thead>
            <tr>
              <th scope="col">Channel</th>
              <th scope="col">Provider</th>
              <th scope="col">Configured</th>
              <th scope="col">State</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {CHANNELS.map((channel) => {
              const provider = providers[channel.key];
              if (!provider) return null;
              const logOnly = provider.name === 'log';
              return (
                <tr key={channel.key}>
                  <th scope="row" data-label="Channel">
                    {channel.label}
                  </th>
                  <td data-label="Provider">
                    <code>{provider.id}</code>
                  </td>
                  <td data-label="Configured">
                    {logOnly ? (
                      <span className="badge badge-client-error">Not sending</span>
                    ) : (
                      <span className="badge badge-ok">Yes</span>
                    )}
                    {logOnly ? (
                      <p className="provider-warning">
                        Nothing leaves the machine: {channel.what} go to the server’s log only (see the
                        description) and show in Deliveries as “Logged, not sent”. Set{' '}
                        <code>{channel.variable}</code> to send them for real.
                      </p>
                    ) : null}
                  </td>
                  <td data-label="State">
                    {logOnly ? (
                      <span className="muted">—</span>
                    ) : (
                      <ProviderState
                        provider={provider}
                        hasFallback={
                          // A fallback that refuses too takes nothing over.
                          channel.key === 'sms' &&
                          providers.smsFallback !== null &&
                          !providers.smsFallback.refusing
                        }
                      />
                    )}
                  </td>
                  <td data-label="Description">{provider.description}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
