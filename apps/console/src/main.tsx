import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import { I18nProvider } from './i18n/react.js';

const root = document.getElementById('root');
if (root) createRoot(root).render(<StrictMode><I18nProvider><App /></I18nProvider></StrictMode>);
