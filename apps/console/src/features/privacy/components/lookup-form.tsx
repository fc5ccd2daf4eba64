import { examplePhone } from '@school/contract';
import type { UseFormReturn } from 'react-hook-form';
import { z } from 'zod';
import { Form, TextField } from '../../../components/ui/form';
import { useServiceInfo } from '../../../lib/service-info';

export const lookupSchema = z.object({
  phone: z
    .string()
    .trim()
    .min(1, 'Type the phone number to look for.')
    .max(64, 'At most 64 characters: a phone number is shorter.'),
});
export type LookupMethods = UseFormReturn<
  z.input<typeof lookupSchema>,
  unknown,
  z.output<typeof lookupSchema>
>;

const regionNames = new Intl.DisplayNames(['en-GB'], { type: 'region' });

/**
 * The number to look for, however the parent gave it: the server reads it as the Phone filter
 * does (international, or national in its DEFAULT_PHONE_REGION). The placeholder is a number of
 * that region, once the service has said which (GET /api/service).
 */
export function LookupForm({
  finding,
  onFind,
}: {
  finding: boolean;
  onFind: (phone: string, methods: LookupMethods) => void;
}) {
  const service = useServiceInfo().data;
  const region = service?.defaultPhoneRegion ?? null;
  const example = service ? examplePhone(region) : undefined;
  const home = region ? (regionNames.of(region) ?? region) : undefined;
  return (
    <Form
      schema={lookupSchema}
      options={{ defaultValues: { phone: '' } }}
      aria-label="Find what is held about a phone number"
      className="form-plain privacy-lookup"
      onSubmit={(values, methods) => onFind(values.phone, methods)}
    >
      {() => (
        <>
          <TextField
            name="phone"
            label="Phone number"
            description={`As the parent gave it, spaces, dashes and dots included: with + and the country code${
              home ? `, or as dialled in the server's region: ${home}` : ''
            }.`}
            type="tel"
            autoComplete="off"
            spellCheck={false}
            placeholder={example ? `e.g. ${example}` : undefined}
          />
          <div className="actions">
            <button type="submit" className="button button-primary" disabled={finding}>
              {finding ? 'Finding…' : 'Find everything held'}
            </button>
          </div>
        </>
      )}
    </Form>
  );
}
