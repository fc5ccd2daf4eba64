import { screen, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { callDetail, deadPush, delivery, deliveryList, problem } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

describe('Call detail', () => {
  it('shows the request and the response side by side, XML indented', async () => {
    server.use(http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7 }))));
    const { user } = renderApp('/history/7');
    expect(await screen.findByRole('heading', { name: 'Call #7', level: 1 })).toBeInTheDocument();
    const request = await screen.findByRole('region', { name: 'Request' });
    const response = screen.getByRole('region', { name: 'Response' });
    const message = (region: HTMLElement) => within(region).getByText(/^(POST|HTTP)/).textContent ?? '';
    const requestText = message(request);
    expect(requestText).toContain('SOAPAction: "http://tempuri.org/AuthCode"');
    expect(requestText).toContain('\n    <AuthCode xmlns="http://tempuri.org/">\n      <code>***</code>\n');
    expect(message(response)).toContain('\n    <AuthCodeResponse xmlns="http://tempuri.org/" />\n');

    await user.click(screen.getByRole('checkbox', { name: /Indent bodies/ }));
    expect(message(request)).toContain('<soap:Body><AuthCode xmlns="http://tempuri.org/">');
  });

  it('shows the request id the server logged the call under, to copy', async () => {
    server.use(
      http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7, requestId: 'nginx-4f1c2a9b' }))),
    );
    const { user } = renderApp('/history/7');
    const id = await screen.findByText('nginx-4f1c2a9b');
    expect(id.tagName).toBe('CODE');
    const term = screen.getByText('Request ID', { selector: 'dt' });
    expect(term.nextElementSibling).toContainElement(id);
    await user.click(screen.getByRole('button', { name: 'Copy request ID' }));
    expect(await navigator.clipboard.readText()).toBe('nginx-4f1c2a9b');
  });

  it('says when a call was recorded before request ids were kept', async () => {
    server.use(http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7, requestId: null }))));
    renderApp('/history/7');
    const term = await screen.findByText('Request ID', { selector: 'dt' });
    expect(term.nextElementSibling).toHaveTextContent('not recorded');
    expect(screen.queryByRole('button', { name: 'Copy request ID' })).not.toBeInTheDocument();
  });

  it('renders recorded bodies as text, never as HTML', async () => {
    const hostile =
      'HTTP/1.1 400\r\nContent-Type: text/html\r\n\r\n<img src=x onerror="alert(1)"><script>alert(2)</script>';
    server.use(http.get('/api/calls/8', () => HttpResponse.json(callDetail({ id: 8, response: hostile }))));
    const { container } = renderApp('/history/8');
    const response = await screen.findByRole('region', { name: 'Response' });
    expect(within(response).getByText(/^HTTP\/1\.1 400/).textContent).toContain('<script>alert(2)</script>');
    expect(container.querySelector('img, script')).toBeNull();
  });

  it('says when there is no such call', async () => {
    server.use(http.get('/api/calls/99', () => problemJson(problem(404, 'No call 99.'))));
    renderApp('/history/99');
    expect(await screen.findByRole('alert')).toHaveTextContent('No call #99: Not found (404)');
    expect(screen.getByRole('link', { name: '← Back to History' })).toHaveAttribute('href', '/history');
  });

  it('shows what the call did and the deliveries it queued, each linking to its attempts', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/calls/9', () =>
        HttpResponse.json(
          callDetail({
            id: 9,
            operation: 'SendNotificationType',
            note: "Push queued to school-northfield for type 'homework'.",
          }),
        ),
      ),
      http.get('/api/deliveries', ({ request }) => {
        const callId = new URL(request.url).searchParams.get('callId');
        return HttpResponse.json(
          callId === '9'
            ? deliveryList([deadPush({ id: 13, callId: 9 }), delivery({ id: 12, callId: 9, status: 'sent' })])
            : deliveryList([]),
        );
      }),
    );
    renderApp('/history/9');
    expect(
      await screen.findByText("Push queued to school-northfield for type 'homework'."),
    ).toBeInTheDocument();

    const section = await screen.findByRole('region', { name: 'Deliveries' });
    const items = await within(section).findAllByRole('listitem');
    // Oldest first, as a timeline.
    expect(items.map((li) => within(li).getByRole('link').textContent)).toEqual([
      'Delivery #12: SMS to +447911123456',
      'Delivery #13: Push to school-northfield',
    ]);
    expect(items[0]).toHaveTextContent('Sent');
    expect(items[1]).toHaveTextContent('Dead');
    expect(items[1]).toHaveTextContent('FCM 503: The service is currently unavailable.');
    expect(within(section).getByRole('link', { name: /Delivery #13/ })).toHaveAttribute(
      'href',
      '/deliveries/13',
    );

    const asked = requests.filter((r) => new URL(r.url).pathname === '/api/deliveries');
    expect(new URL(asked[0]?.url ?? '').searchParams.get('callId')).toBe('9');
  });

  it('says when a call queued nothing', async () => {
    server.use(http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7, note: null }))));
    renderApp('/history/7');
    const section = await screen.findByRole('region', { name: 'Deliveries' });
    expect(await within(section).findByText('This call queued no SMS or push.')).toBeInTheDocument();
  });
});
