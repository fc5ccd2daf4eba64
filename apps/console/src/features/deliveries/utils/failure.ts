import type { ProviderInfo, ServiceInfo } from '@school/contract';

/**
 * The provider `id` while sending through it is paused (its circuit open after repeated
 * failures), as the service describes it; undefined while it is sent to.
 */
export function pausedProvider(
  id: string,
  providers: ServiceInfo['providers'] | undefined,
): ProviderInfo | undefined {
  const provider = [providers?.sms, providers?.smsFallback, providers?.push].find((p) => p?.id === id);
  return provider?.circuit.state === 'open' ? provider : undefined;
}
