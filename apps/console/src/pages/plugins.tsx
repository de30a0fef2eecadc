// Plugins: what their heartbeats announce (name, version, events, tools), when each last beat, and the
// pipelines whose extensions preferences bind it.
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { formatRoute } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

export function Plugins() {
  const list = useLoad((signal) => request('GET', '/plugins', AdminApi.PluginList, { signal }), []);
  const { t, dateTime } = useI18n();
  return (
    <section>
      <PageHeader title={t('plugins.title')}><button onClick={list.reload} disabled={list.loading}>{t('common.refresh')}</button></PageHeader>
      <p className="hint">{t('plugins.hint')}</p>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.name')}</th><th>{t('plugins.version')}</th><th>{t('plugins.events')}</th><th>{t('plugins.tools')}</th><th>{t('plugins.priority')}</th><th>{t('plugins.lastHeartbeat')}</th><th>{t('plugins.pipelines')}</th></tr></thead>
          <tbody>
            {list.data.items.map((p) => (
              <tr key={p.name} data-name={p.name}>
                <td translate="no">{p.name}</td>
                <td>{p.version === null ? t('plugins.noVersion') : <span translate="no">{p.version}</span>}</td>
                <td className="mono" translate="no">{p.events.join(', ')}</td>
                <td className="mono" translate="no">{p.tools.join(', ')}</td>
                <td>{p.priority}</td>
                <td>{dateTime(p.lastHeartbeatAt)}</td>
                <td translate="no">{p.pipelines.map((id, i) => <span key={id}>{i ? ', ' : ''}<a href={formatRoute({ page: 'pipelines', id })}>{id}</a></span>)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={7} className="empty">{t('plugins.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
