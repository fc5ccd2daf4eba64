import { BINDINGS, type Binding } from '@school/contract';
import type { SoapVersion } from './envelope.js';

/** The bindings an `.asmx` endpoint speaks: every binding of the contract but the console's API. */
export type WireBinding = Exclude<Binding, 'console'>;
export const WIRE_BINDINGS: readonly WireBinding[] = BINDINGS.filter(
  (b): b is WireBinding => b !== 'console',
);

/** The one place a SOAP version is paired with its binding; both directions read it. */
const BINDING_OF_VERSION = { '1.1': 'soap11', '1.2': 'soap12' } as const satisfies Record<
  SoapVersion,
  Binding
>;

/** The SOAP bindings: `soap11`, `soap12`. */
export type SoapBinding = (typeof BINDING_OF_VERSION)[SoapVersion];

/** The SOAP versions, in the contract's order of their bindings. */
export const SOAP_VERSIONS = Object.keys(BINDING_OF_VERSION) as readonly SoapVersion[];

const VERSION_OF_BINDING = new Map<Binding, SoapVersion>(
  SOAP_VERSIONS.map((version) => [BINDING_OF_VERSION[version], version]),
);

/** The binding a SOAP request of this version came in by. */
export function bindingOfSoapVersion(version: SoapVersion): SoapBinding {
  return BINDING_OF_VERSION[version];
}

/** The SOAP version a binding speaks; undefined for the HTTP GET/POST bindings and the console. */
export function soapVersionOfBinding(binding: SoapBinding): SoapVersion;
export function soapVersionOfBinding(binding: Binding): SoapVersion | undefined;
export function soapVersionOfBinding(binding: Binding): SoapVersion | undefined {
  return VERSION_OF_BINDING.get(binding);
}
