import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { BASE_URL, serviceInfo } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { server } from '../../../testing/server';

const providerRow = (channel: string) => {
  const table = screen.getByRole('table', { name: 'Providers in use' });
  const row = within(table).getByRole('rowheader', { name: channel }).closest('tr');
  if (!row) throw new Error(`no ${channel} row`);
  return row;
};

describe('Service', () => {
  it('warns when free disk space is low and raw bodies are no longer stored', async () => {
    server.use(
      http.get('*/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          storage: {
            freeBytes: 200 * 1024 * 1024,
            minFreeBytes: 1024 * 1024 * 1024,
            refuseFreeBytes: 64 * 1024 * 1024,
            rawBodiesStored: false,
            refusingCalls: false,
            full: false,
          },
        }),
      ),
    );
    renderApp('/service');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Free disk space is low');
    expect(alert).toHaveTextContent('without their request and response bodies');
  });

  it('says calls are refused while the disk is nearly full', async () => {
    server.use(
      http.get('*/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          storage: {
            freeBytes: 30 * 1024 * 1024,
            minFreeBytes: 1024 * 1024 * 1024,
            refuseFreeBytes: 64 * 1024 * 1024,
            rawBodiesStored: false,
            refusingCalls: true,
            full: false,
          },
        }),
      ),
    );
    renderApp('/service');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('The disk is nearly full: calls are refused');
    expect(alert).toHaveTextContent('Free some space');
  });

  it('says the disk is full once a write found it so, whatever the thresholds', async () => {
    server.use(
      http.get('*/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          storage: {
            freeBytes: 200 * 1024,
            minFreeBytes: 0,
            refuseFreeBytes: 0,
            rawBodiesStored: true,
            refusingCalls: true,
            full: true,
          },
        }),
      ),
    );
    renderApp('/service');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('The disk is full: calls are refused');
    expect(alert).toHaveTextContent('(200.0 KB free)');
  });

  it('says where login codes are sent, and warns when every country is allowed', async () => {
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          smsDestinations: { allowedCountries: ['GB', 'GG'], fixedLines: false },
        }),
      ),
    );
    renderApp('/service');
    const section = await screen.findByRole(
      'region',
      { name: 'Where login codes are sent' },
      { timeout: 5000 },
    );
    expect(section).toHaveTextContent('CountriesUnited Kingdom (GB), Guernsey (GG)');
    expect(section).toHaveTextContent('Mobiles only (landlines are refused)');
    expect(within(section).queryByText('Every country is allowed')).not.toBeInTheDocument();

    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({ ...serviceInfo, smsDestinations: { allowedCountries: null, fixedLines: true } }),
      ),
    );
    renderApp('/service');
    await waitFor(() => expect(screen.getAllByText('Every country is allowed').length).toBeGreaterThan(0));
  });

  it('says nothing of the disk while there is room', async () => {
    renderApp('/service');
    await screen.findByRole('region', { name: 'Authentication code sending' });
    expect(screen.queryByText('Free disk space is low')).not.toBeInTheDocument();
  });

  it('lists each endpoint with its WSDL and help page, the namespace and the API docs', async () => {
    renderApp('/service');
    const group = await screen.findByRole('region', { name: 'Authentication code sending' });
    expect(within(group).getByText(`${BASE_URL}/AuthCodeSending.asmx`)).toBeInTheDocument();
    expect(within(group).getByRole('link', { name: 'WSDL of AuthCodeSending' })).toHaveAttribute(
      'href',
      `${BASE_URL}/AuthCodeSending.asmx?wsdl`,
    );
    expect(within(group).getByRole('link', { name: 'Help page of AuthCodeSending' })).toHaveAttribute(
      'href',
      `${BASE_URL}/AuthCodeSending.asmx`,
    );
    expect(within(group).getByRole('link', { name: 'Help for AuthCode' })).toHaveAttribute(
      'href',
      `${BASE_URL}/AuthCodeSending.asmx?op=AuthCode`,
    );
    // One region per endpoint group, the providers, and where codes are sent.
    expect(screen.getAllByRole('region')).toHaveLength(6);
    expect(screen.getByText('http://tempuri.org/')).toBeInTheDocument();
    const docs = screen.getByRole('link', {
      name: 'The console’s JSON API, for developers (OpenAPI, opens in a new tab)',
    });
    expect(docs).toHaveAttribute('href', '/api/docs');
    expect(docs).toHaveAttribute('target', '_blank');
    // Sizes as staff read them, not "47683.7 MiB".
    expect(screen.getByText('Free disk space').nextElementSibling).toHaveTextContent(/^46\.6 GB$/);
  });

  it('says plainly that the log providers send nothing', async () => {
    renderApp('/service');
    await screen.findByRole('region', { name: 'Providers' });
    const sms = providerRow('SMS');
    expect(sms).toHaveTextContent('log');
    expect(sms).toHaveTextContent('Not sending');
    expect(sms).toHaveTextContent(
      'Nothing leaves the machine: texts go to the server’s log only (see the description) and show in Deliveries as “Logged, not sent”. Set SMS_PROVIDER to send them for real.',
    );
    // What the log holds is the provider's own description (the server's, tested with the log).
    expect(sms).toHaveTextContent(
      'log: writes each SMS to the server log (its number, and its text with the code masked); sends nothing (SMS_PROVIDER=log)',
    );
    expect(providerRow('Push')).toHaveTextContent(
      /Nothing leaves the machine: pushes go to the server’s log only .*Set PUSH_PROVIDER to send them for real\./,
    );
  });

  it('shows the providers in use, with their descriptions, as configured', async () => {
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            sms: {
              name: 'twilio',
              id: 'twilio',
              description: 'twilio: from +15005550006 (account AC…1234)',
              circuit: { state: 'closed', since: '2026-11-20T08:00:00.000Z', until: null },
              refusing: null,
            },
            smsFallback: null,
            push: {
              name: 'fcm',
              id: 'fcm',
              description: 'fcm: project school-app-7 (topic messages)',
              circuit: { state: 'closed', since: '2026-11-20T08:00:00.000Z', until: null },
              refusing: null,
            },
          },
        }),
      ),
    );
    renderApp('/service');
    await screen.findByRole('region', { name: 'Providers' });
    const sms = providerRow('SMS');
    expect(within(sms).getByText('twilio')).toBeInTheDocument();
    expect(sms).toHaveTextContent('Yes');
    expect(sms).toHaveTextContent('twilio: from +15005550006 (account AC…1234)');
    expect(sms).not.toHaveTextContent('Nothing leaves the machine');
    const push = providerRow('Push');
    expect(push).toHaveTextContent('fcm: project school-app-7 (topic messages)');
    expect(push).not.toHaveTextContent('Not sending');
  });

  it('says when a provider is failing and the fallback takes its messages, and when it is tried again', async () => {
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            sms: {
              name: 'http',
              id: 'http',
              description: 'http: POST https://gateway.example.com/send',
              circuit: {
                state: 'open',
                since: '2026-11-20T08:10:00.000Z',
                until: '2026-11-20T08:10:30.000Z',
              },
              refusing: null,
            },
            smsFallback: {
              name: 'twilio',
              id: 'twilio-fallback',
              description: 'twilio: from +15005550006 (account AC…1234)',
              circuit: { state: 'closed', since: '2026-11-20T08:00:00.000Z', until: null },
              refusing: null,
            },
            push: {
              name: 'fcm',
              id: 'fcm',
              description: 'fcm: project school-app-7 (topic messages)',
              circuit: { state: 'half-open', since: '2026-11-20T08:12:00.000Z', until: null },
              refusing: null,
            },
          },
        }),
      ),
    );
    renderApp('/service');
    await screen.findByRole('table', { name: 'Providers in use' });
    const sms = providerRow('SMS');
    expect(sms).toHaveTextContent('Failing: paused');
    expect(sms).toHaveTextContent('its messages go to the other SMS provider');
    const fallback = providerRow('SMS fallback');
    expect(within(fallback).getByText('twilio-fallback')).toBeInTheDocument();
    expect(fallback).toHaveTextContent('Working');
    expect(providerRow('Push')).toHaveTextContent('Being tried again');
  });

  it('says a provider refuses every message, in its own words, since when and how often, whatever its circuit', async () => {
    // Refusing since a moment ago, today: the time reads as a clock.
    const since = new Date(Date.now() - 1000).toISOString();
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            ...serviceInfo.providers,
            sms: {
              name: 'http',
              id: 'http',
              description: 'http: POST https://gateway.example.com/send',
              // A refusal is nothing a cool-down cures: the circuit may stay closed.
              circuit: { state: 'closed', since: '2026-11-20T08:00:00.000Z', until: null },
              refusing: { reason: 'account suspended', status: 403, since, refusals: 12, attempts: 12 },
            },
          },
        }),
      ),
    );
    renderApp('/service');
    await screen.findByRole('table', { name: 'Providers in use' });
    const sms = providerRow('SMS');
    expect(sms).not.toHaveTextContent('Working');
    expect(within(sms).getByText('Refusing')).toHaveClass('badge');
    expect(sms).toHaveTextContent(
      /Refusing: account suspended \(HTTP 403\) since \d{1,2}:\d{2}:\d{2}(?: [AP]M)?, 12 of the last 12\. Fix the account with the provider; retries will not help until then\./,
    );
    expect(providerRow('Push')).toHaveTextContent('—');
  });
});
