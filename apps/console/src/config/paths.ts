/** The console's routes, in one place, so features link to each other without importing each other. */
export const paths = {
  home: '/',
  send: {
    pattern: '/send/:operation?',
    href: (operation?: string) => (operation ? `/send/${encodeURIComponent(operation)}` : '/send'),
  },
  history: {
    pattern: '/history',
    href: (search = '') => `/history${search}`,
  },
  call: {
    pattern: '/history/:id',
    href: (id: number) => `/history/${id}`,
  },
  deliveries: {
    pattern: '/deliveries',
    href: (search = '') => `/deliveries${search}`,
  },
  delivery: {
    pattern: '/deliveries/:id',
    href: (id: number) => `/deliveries/${id}`,
  },
  dashboard: { pattern: '/dashboard', href: () => '/dashboard' },
  books: { pattern: '/books', href: () => '/books' },
  schools: { pattern: '/schools', href: () => '/schools' },
  templates: { pattern: '/templates', href: () => '/templates' },
  service: { pattern: '/service', href: () => '/service' },
  /** Served by the server (not a console route): the OpenAPI documentation of the JSON API. */
  apiDocs: '/api/docs',
} as const;
