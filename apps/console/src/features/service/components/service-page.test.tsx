import { screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { BASE_URL } from '../../../testing/data';
import { renderApp } from '../../../testing/render';

describe('Service', () => {
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
    expect(screen.getAllByRole('region')).toHaveLength(4);
    expect(screen.getByText('http://tempuri.org/')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'API documentation (OpenAPI)' })).toHaveAttribute(
      'href',
      '/api/docs',
    );
  });
});
