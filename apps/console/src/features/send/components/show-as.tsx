import { samples, WIRE_BINDINGS, type WireBinding } from '@school/asmx/samples';
import { BINDING_LABELS, type OperationDef } from '@school/contract';
import { useId, useMemo, useRef, useState } from 'react';
import { useFormContext, useWatch } from 'react-hook-form';
import { CodeBlock } from '../../../components/ui/code-block';
import { CopyButton } from '../../../components/ui/copy-button';
import { ErrorState, Loading } from '../../../components/ui/status';
import { Tabs } from '../../../components/ui/tabs';
import { useServiceInfo } from '../../../lib/service-info';
import { toCurl } from '../utils/curl';

const TABS: readonly { key: WireBinding; label: string }[] = WIRE_BINDINGS.map((key) => ({
  key,
  label: BINDING_LABELS[key],
}));

/**
 * The request each wire binding would send for the values typed in the surrounding form, with the
 * service's own namespace and address (GET /api/service), copyable as text or as curl.
 */
export function ShowAs({ op }: { op: OperationDef }) {
  const [binding, setBinding] = useState<WireBinding>('soap11');
  const service = useServiceInfo();
  const { control } = useFormContext<Record<string, string>>();
  const values = useWatch({ control }) as Record<string, string | undefined>;

  const group = service.data?.groups.find((g) => g.operations.some((o) => o.name === op.name));
  const rendered = useMemo(() => {
    if (!service.data || !group) return undefined;
    const url = new URL(group.url);
    const typed = Object.fromEntries(op.params.map((p) => [p.name, values[p.name] ?? '']));
    const all = samples(op, {
      groupPath: url.pathname,
      namespace: service.data.namespace,
      host: url.host,
      values: typed,
    });
    const sample = all[binding];
    return { request: sample.request, curl: toCurl(sample, url.origin) };
  }, [service.data, group, op, values, binding]);

  return (
    <section className="show-as" aria-labelledby="show-as-heading">
      <h3 id="show-as-heading">Show as</h3>
      <p className="hint">The exact request a school's server would send for the values above.</p>
      {service.isPending ? (
        <Loading>Loading the service's address…</Loading>
      ) : service.isError ? (
        <ErrorState
          error={service.error}
          title="Could not load the service"
          onRetry={() => service.refetch()}
        />
      ) : !rendered ? (
        <p>The service does not list {op.name}.</p>
      ) : (
        <Tabs label="Protocol" tabs={TABS} selected={binding} onSelect={setBinding}>
          <Snippet title="Request" copyLabel="Copy request" text={rendered.request} />
          <Snippet title="curl" copyLabel="Copy curl command" text={rendered.curl} />
        </Tabs>
      )}
    </section>
  );
}

function Snippet({ title, copyLabel, text }: { title: string; copyLabel: string; text: string }) {
  const ref = useRef<HTMLPreElement>(null);
  const headingId = useId();
  return (
    <figure className="snippet" aria-labelledby={headingId}>
      <div className="snippet-head">
        <h4 id={headingId}>{title}</h4>
        <CopyButton text={text} label={copyLabel} target={ref} />
      </div>
      <CodeBlock ref={ref} text={text} labelledBy={headingId} />
    </figure>
  );
}
