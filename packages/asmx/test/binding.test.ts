import { BINDINGS } from '@school/contract';
import { describe, expect, it } from 'vitest';
import {
  bindingOfSoapVersion,
  SOAP_VERSIONS,
  samples,
  soapContentType,
  soapVersionOfBinding,
  WIRE_BINDINGS,
} from '../src/index.js';

describe('bindings and SOAP versions', () => {
  it('pairs each SOAP version with its binding, both ways', () => {
    expect(SOAP_VERSIONS).toEqual(['1.1', '1.2']);
    expect(SOAP_VERSIONS.map(bindingOfSoapVersion)).toEqual(['soap11', 'soap12']);
    expect(BINDINGS.map((b) => soapVersionOfBinding(b))).toEqual([
      '1.1',
      '1.2',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('speaks every binding of the contract on the wire but the console', () => {
    expect(WIRE_BINDINGS).toEqual(['soap11', 'soap12', 'http-get', 'http-post']);
  });

  it('gives each SOAP binding its sample in its own version', () => {
    const op = { name: 'pushNoti', group: 'PushNotificationMobile', summary: '', params: [] };
    const all = samples(op, {
      groupPath: '/PushNotificationMobile.asmx',
      namespace: 'http://tempuri.org/',
      host: 'h',
    });
    expect(Object.keys(all)).toEqual(WIRE_BINDINGS);
    for (const version of SOAP_VERSIONS) {
      expect(all[bindingOfSoapVersion(version)].headers).toContainEqual([
        'Content-Type',
        soapContentType(version),
      ]);
    }
  });
});
