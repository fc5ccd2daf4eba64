import { screen, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { callDetail, delivery, deliveryList } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { server } from '../../../testing/server';

describe("A call's deliveries", () => {
  it('show one the log provider took as logged, not sent', async () => {
    server.use(
      http.get('/api/calls/9', () =>
        HttpResponse.json(callDetail({ id: 9, note: 'SMS queued to +447911123456.' })),
      ),
      http.get('/api/deliveries', ({ request }) =>
        HttpResponse.json(
          new URL(request.url).searchParams.get('callId') === '9'
            ? deliveryList([
                delivery({ id: 12, callId: 9, provider: 'log', status: 'logged', providerId: null }),
              ])
            : deliveryList([]),
        ),
      ),
    );
    renderApp('/history/9');
    const section = await screen.findByRole('region', { name: 'Deliveries' });
    const [item] = await within(section).findAllByRole('listitem');
    expect(within(item as HTMLElement).getByText('Logged, not sent')).toHaveClass('badge-delivery-logged');
    // When it was logged, never "sent".
    expect(item).toHaveTextContent('· logged');
    expect(item).not.toHaveTextContent('· sent');
    expect(item).toHaveTextContent('through log');
  });
});
