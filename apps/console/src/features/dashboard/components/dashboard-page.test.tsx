import { screen, waitFor } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { stats } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { recordRequests, server } from '../../../testing/server';

const statsRequests = (requests: Request[]) =>
  requests.filter((r) => new URL(r.url).pathname === '/api/stats').map((r) => new URL(r.url).searchParams);

describe('Dashboard', () => {
  it('names each chart and says in words what it shows', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/stats', ({ request }) => {
        const q = new URL(request.url).searchParams;
        const to = q.get('to') ?? '';
        const from = q.get('from') ?? '';
        const hour = (back: number) =>
          new Date(Math.floor(Date.parse(to) / 3_600_000) * 3_600_000 - back * 3_600_000).toISOString();
        return HttpResponse.json(
          stats({
            from,
            to,
            bucket: 'hour',
            rows: [
              { bucket: hour(3), operation: 'AuthCode', outcome: 'ok', count: 8 },
              { bucket: hour(3), operation: 'AuthCode', outcome: 'client-error', count: 2 },
              { bucket: hour(1), operation: 'pushNoti', outcome: 'ok', count: 2 },
            ],
          }),
        );
      }),
    );
    const { user } = renderApp('/dashboard');

    const calls = await screen.findByRole('figure', { name: 'Calls per hour by operation' });
    expect(calls).toHaveAccessibleDescription('12 calls in the last 24 hours: AuthCode 10, pushNoti 2.');
    const errors = screen.getByRole('figure', { name: 'Error rate (%) per hour' });
    expect(errors).toHaveAccessibleDescription(
      /^Error rate 17% in the last 24 hours \(2 client errors, 0 server errors\); highest 20% in the hour from /,
    );

    const [first] = statsRequests(requests);
    expect(first?.get('bucket')).toBe('hour');
    const span = Date.parse(first?.get('to') ?? '') - Date.parse(first?.get('from') ?? '');
    expect(span).toBe(24 * 3_600_000);

    await user.selectOptions(screen.getByLabelText('Period'), 'Last 7 days');
    await user.selectOptions(screen.getByLabelText('Bucket'), 'Day');
    await waitFor(() => {
      const last = statsRequests(requests).at(-1);
      expect(last?.get('bucket')).toBe('day');
      expect(Date.parse(last?.get('to') ?? '') - Date.parse(last?.get('from') ?? '')).toBe(7 * 86_400_000);
    });
  });

  it('says when the period had no calls', async () => {
    server.use(http.get('/api/stats', () => HttpResponse.json(stats({ rows: [] }))));
    renderApp('/dashboard');
    expect(await screen.findByText('No calls in this period.')).toBeInTheDocument();
  });
});
