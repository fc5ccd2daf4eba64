import { describe, expect, it } from 'vitest';
import { parseContentType } from '../src/index.js';

/** The header as parsed: media type and parameters, as a plain object for comparison. */
const parsed = (header: string | undefined) => {
  const { mediaType, params } = parseContentType(header);
  return { mediaType, params: Object.fromEntries(params) };
};

describe('parseContentType', () => {
  it('answers an empty media type and no parameters for an absent or empty header', () => {
    expect(parsed(undefined)).toEqual({ mediaType: '', params: {} });
    expect(parsed('')).toEqual({ mediaType: '', params: {} });
  });

  it('lower-cases and trims the media type, with or without parameters', () => {
    expect(parsed('text/xml')).toEqual({ mediaType: 'text/xml', params: {} });
    expect(parsed('  Text/XML  ')).toEqual({ mediaType: 'text/xml', params: {} });
    expect(parsed('Application/SOAP+XML;charset=utf-8').mediaType).toBe('application/soap+xml');
    // Parameters without a media type (a broken client): the type is empty, the charset still read.
    expect(parsed('; charset=utf-8')).toEqual({ mediaType: '', params: { charset: 'utf-8' } });
  });

  it('reads the SOAP 1.2 action and the charset, names in any case, values as sent', () => {
    expect(parsed('application/soap+xml; charset=utf-8; action="http://tempuri.org/AuthCode"')).toEqual({
      mediaType: 'application/soap+xml',
      params: { charset: 'utf-8', action: 'http://tempuri.org/AuthCode' },
    });
    // Names are lower-cased; values keep their case (a charset is compared by the reader, not here).
    expect(parsed('text/xml; CharSet=UTF-8; ACTION=Urn:X').params).toEqual({
      charset: 'UTF-8',
      action: 'Urn:X',
    });
  });

  it('allows white space around `;` and `=`, and trims unquoted values', () => {
    expect(parsed('text/xml ;  charset = utf-8 ; action = urn:a  ').params).toEqual({
      charset: 'utf-8',
      action: 'urn:a',
    });
    expect(parsed('text/xml;charset=utf-8;action=urn:a').params).toEqual({
      charset: 'utf-8',
      action: 'urn:a',
    });
  });

  it('unquotes quoted values, keeping `;` inside the quotes and resolving backslash escapes', () => {
    expect(parsed('application/soap+xml; action="urn:a;b"; charset=utf-8').params).toEqual({
      action: 'urn:a;b',
      charset: 'utf-8',
    });
    expect(parsed('application/soap+xml; action="say \\"hi\\" \\\\ bye"').params.action).toBe(
      'say "hi" \\ bye',
    );
    // A quoted value keeps its inner spaces; an empty quoted value is a value.
    expect(parsed('text/xml; action=" urn:a "').params.action).toBe(' urn:a ');
    expect(parsed('text/xml; action=""').params.action).toBe('');
  });

  it('keeps the first of repeated parameters, whatever their case', () => {
    expect(parsed('text/xml; charset=utf-8; CHARSET=iso-8859-1; charset=utf-16').params).toEqual({
      charset: 'utf-8',
    });
  });

  it('skips a parameter without `=`, and reads an empty unquoted value as empty', () => {
    expect(parsed('text/xml; bogus; charset=utf-8').params).toEqual({ charset: 'utf-8' });
    expect(parsed('text/xml; charset=').params).toEqual({ charset: '' });
    expect(parsed('text/xml;;; charset=utf-8;').params).toEqual({ charset: 'utf-8' });
  });

  it('answers a fresh parameter map each time (callers cannot change what another one reads)', () => {
    const first = parseContentType('text/xml; charset=utf-8');
    (first.params as Map<string, string>).set('charset', 'changed');
    expect(parseContentType('text/xml; charset=utf-8').params.get('charset')).toBe('utf-8');
  });
});
