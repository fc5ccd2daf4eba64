// The shared styles come first, in this order: base (tokens, reset, typography), the shell, the
// shared UI. Each feature's own CSS is imported by its pages, so it lands after these (in the entry
// for Send, in its lazy chunk for the others) and a feature's rule wins over a shared one of the
// same specificity, as it did when all of it was one file.
import './base.css';
import './app/layout.css';
import './components/ui/ui.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app/app';

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');

createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
