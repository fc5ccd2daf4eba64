import { zodResolver } from '@hookform/resolvers/zod';
import { type ComponentProps, type ReactNode, useId } from 'react';
import {
  type FieldValues,
  FormProvider,
  type RegisterOptions,
  type SubmitHandler,
  type UseFormProps,
  type UseFormReturn,
  useForm,
  useFormContext,
} from 'react-hook-form';
import type { z } from 'zod';

/**
 * The one form wrapper: react-hook-form validated by a zod schema (the contract's), with the
 * form's methods in context so each field wires its label, description, error and ARIA once.
 */
export function Form<S extends z.ZodType<FieldValues, FieldValues>>({
  schema,
  onSubmit,
  options,
  children,
  ...props
}: {
  schema: S;
  onSubmit: (values: z.output<S>, methods: UseFormReturn<z.input<S>, unknown, z.output<S>>) => void;
  options?: Omit<UseFormProps<z.input<S>, unknown, z.output<S>>, 'resolver'>;
  children: (methods: UseFormReturn<z.input<S>, unknown, z.output<S>>) => ReactNode;
} & Omit<ComponentProps<'form'>, 'onSubmit' | 'children'>) {
  const methods = useForm<z.input<S>, unknown, z.output<S>>({ ...options, resolver: zodResolver(schema) });
  const submit: SubmitHandler<z.output<S>> = (values) => onSubmit(values, methods);
  return (
    <FormProvider {...methods}>
      {/* noValidate: the schema gives the messages, the same ones the server would. */}
      <form noValidate {...props} onSubmit={methods.handleSubmit(submit)}>
        {children(methods)}
      </form>
    </FormProvider>
  );
}

interface FieldProps {
  name: string;
  label: ReactNode;
  description?: ReactNode;
  /** Passed to `register`, e.g. an onChange that submits the form. */
  registerOptions?: RegisterOptions;
}

/** Label, description and error around a control, and the props that tie them together. */
function useField({ name, description }: Pick<FieldProps, 'name' | 'description'>) {
  const { register, getFieldState, formState } = useFormContext();
  const id = useId();
  const { error } = getFieldState(name, formState);
  const descriptionId = description ? `${id}-description` : undefined;
  const errorId = error?.message ? `${id}-error` : undefined;
  return {
    register,
    error,
    descriptionId,
    errorId,
    control: {
      id,
      'aria-invalid': error ? true : undefined,
      'aria-describedby': [descriptionId, errorId].filter(Boolean).join(' ') || undefined,
    },
  };
}

function FieldFrame({
  id,
  label,
  description,
  descriptionId,
  error,
  errorId,
  className,
  children,
}: {
  id: string;
  label: ReactNode;
  description: ReactNode;
  descriptionId: string | undefined;
  error: string | undefined;
  errorId: string | undefined;
  className: string | undefined;
  children: ReactNode;
}) {
  return (
    <div className={['field', error ? 'field-invalid' : '', className ?? ''].filter(Boolean).join(' ')}>
      <label htmlFor={id}>{label}</label>
      {description ? (
        <p className="field-description" id={descriptionId}>
          {description}
        </p>
      ) : null}
      {children}
      {error ? (
        <p className="field-error" id={errorId}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** A text input registered with the surrounding Form. */
export function TextField({
  name,
  label,
  description,
  registerOptions,
  className,
  ...input
}: FieldProps & Omit<ComponentProps<'input'>, 'name' | 'id'>) {
  const field = useField({ name, description });
  return (
    <FieldFrame
      id={field.control.id}
      label={label}
      description={description}
      descriptionId={field.descriptionId}
      error={field.error?.message}
      errorId={field.errorId}
      className={className}
    >
      <input type="text" {...input} {...field.control} {...field.register(name, registerOptions)} />
    </FieldFrame>
  );
}

/** A select registered with the surrounding Form. */
export function SelectField({
  name,
  label,
  description,
  registerOptions,
  options,
  className,
  ...select
}: FieldProps & {
  options: readonly { value: string; label: string }[];
} & Omit<ComponentProps<'select'>, 'name' | 'id' | 'children'>) {
  const field = useField({ name, description });
  return (
    <FieldFrame
      id={field.control.id}
      label={label}
      description={description}
      descriptionId={field.descriptionId}
      error={field.error?.message}
      errorId={field.errorId}
      className={className}
    >
      <select {...select} {...field.control} {...field.register(name, registerOptions)}>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    </FieldFrame>
  );
}

/** A multi-line text input registered with the surrounding Form. */
export function TextAreaField({
  name,
  label,
  description,
  registerOptions,
  className,
  ...textarea
}: FieldProps & Omit<ComponentProps<'textarea'>, 'name' | 'id'>) {
  const field = useField({ name, description });
  return (
    <FieldFrame
      id={field.control.id}
      label={label}
      description={description}
      descriptionId={field.descriptionId}
      error={field.error?.message}
      errorId={field.errorId}
      className={className}
    >
      <textarea {...textarea} {...field.control} {...field.register(name, registerOptions)} />
    </FieldFrame>
  );
}

/** A file input registered with the surrounding Form: its value is the FileList chosen. */
export function FileField({
  name,
  label,
  description,
  registerOptions,
  className,
  ...input
}: FieldProps & Omit<ComponentProps<'input'>, 'name' | 'id' | 'type'>) {
  const field = useField({ name, description });
  return (
    <FieldFrame
      id={field.control.id}
      label={label}
      description={description}
      descriptionId={field.descriptionId}
      error={field.error?.message}
      errorId={field.errorId}
      className={className}
    >
      <input type="file" {...input} {...field.control} {...field.register(name, registerOptions)} />
    </FieldFrame>
  );
}
