/** The console's routes, in one place, so features link to each other without importing each other. */
export const paths = {
  home: '/',
  /** `next`: where to return after logging in (a path of this console, checked by lib/next-path.ts). */
  login: {
    pattern: '/login',
    href: (next?: string) =>
      // "/" needs no escaping in a query, and keeping it makes the address readable.
      next ? `/login?next=${encodeURIComponent(next).replaceAll('%2F', '/')}` : '/login',
  },
  /** The first admin, with the one-time token the server wrote to its log. */
  setup: { pattern: '/setup', href: () => '/setup' },
  account: { pattern: '/account', href: () => '/account' },
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
  users: { pattern: '/users', href: () => '/users' },
  audit: { pattern: '/audit', href: (search = '') => `/audit${search}` },
  /** A parent's phone number: what is held about it, and its erasure (admins). */
  privacy: { pattern: '/privacy', href: () => '/privacy' },
  service: { pattern: '/service', href: () => '/service' },
  /** Served by the server (not a console route): the OpenAPI documentation of the JSON API. */
  apiDocs: '/api/docs',
} as const;
