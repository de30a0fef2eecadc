// Knowledge bases: their settings (name, description and retrieval editable), their documents'
// upload, ingestion state (refreshed while a document waits or is being indexed), re-index and
// removal. A runner ingests what is uploaded.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { AdminApi, LIMITS } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

const base = (id: string) => `/knowledge-bases/${encodeURIComponent(id)}`;
/** How often a page with a document in flight asks again. */
const REFRESH_MS = 1_500;
const FORMATS = '.txt .md .markdown .csv .tsv .log .html .htm .pdf .docx .xlsx .epub';
const MODES = AdminApi.KnowledgeRetrievalMode.options;

export function KnowledgeBases({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id === 'new') return <KnowledgeBaseCreate canWrite={canWrite} />;
  if (route.id) return <KnowledgeBaseView id={route.id} canWrite={canWrite} />;
  return <KnowledgeBaseList canWrite={canWrite} />;
}

function Counts({ kb }: { kb: AdminApi.KnowledgeBase }) {
  const { t } = useI18n();
  return <>{t('kb.counts', kb.documents)}</>;
}

function KnowledgeBaseList({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/knowledge-bases', AdminApi.KnowledgeBase, { signal }), []);
  const { t, dateTime } = useI18n();
  return (
    <section>
      <PageHeader title={t('kb.title')}>{canWrite ? <a className="button" href={formatRoute({ page: 'knowledge-bases', id: 'new' })}>{t('kb.new')}</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.name')}</th><th>{t('common.id')}</th><th>{t('kb.embeddingModel')}</th><th>{t('kb.documents')}</th><th>{t('kb.chunks')}</th><th>{t('common.updated')}</th></tr></thead>
          <tbody>
            {list.data.items.map((kb) => (
              <tr key={kb.id} data-id={kb.id}>
                <td translate="no"><a href={formatRoute({ page: 'knowledge-bases', id: kb.id })}>{kb.name}</a></td>
                <td className="mono" translate="no">{kb.id}</td>
                <td translate="no">{kb.embeddingModelId}</td>
                <td><Counts kb={kb} /></td>
                <td>{kb.chunks}</td>
                <td>{dateTime(kb.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={6} className="empty">{t('kb.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function KnowledgeBaseCreate({ canWrite }: { canWrite: boolean }) {
  const models = useLoad((signal) => listAll('/models', AdminApi.Model, { signal }), []);
  const plugins = useLoad((signal) => request('GET', '/plugins', AdminApi.PluginList, { signal }), []);
  const retrievers = plugins.data?.items.flatMap((p) => p.retrievers.map((name) => ({ plugin: p.name, name }))) ?? [];
  /** '' for documents, else `plugin\u0000retriever`. */
  const [source, setSource] = useState('');
  const embedding = models.data?.items.filter((m) => m.abilities.includes('embedding')) ?? [];
  const rerank = models.data?.items.filter((m) => m.abilities.includes('rerank')) ?? [];
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [embeddingModelId, setEmbeddingModelId] = useState('');
  const [rerankModelId, setRerankModelId] = useState('');
  const [chunkSize, setChunkSize] = useState('512');
  const [chunkOverlap, setChunkOverlap] = useState('50');
  const [topK, setTopK] = useState('5');
  const [retrievalMode, setRetrievalMode] = useState<AdminApi.KnowledgeRetrievalMode>('hybrid');
  const save = useAction();
  const { t } = useI18n();
  const chosenModel = embeddingModelId || embedding[0]?.id || '';

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const [plugin, retriever] = source.split('\u0000');
      const created = await request('POST', '/knowledge-bases', AdminApi.KnowledgeBase, {
        body: source
          ? { id: id.trim(), name: name.trim(), description, retriever: { plugin: plugin ?? '', name: retriever ?? '' }, ...(rerankModelId ? { rerankModelId } : {}), topK: Number(topK) }
          : { id: id.trim(), name: name.trim(), description, embeddingModelId: chosenModel, ...(rerankModelId ? { rerankModelId } : {}), chunkSize: Number(chunkSize), chunkOverlap: Number(chunkOverlap), topK: Number(topK), retrievalMode },
      });
      location.hash = formatRoute({ page: 'knowledge-bases', id: created.id });
    });
  };

  return (
    <section>
      <PageHeader title={t('kb.new')}><a href={formatRoute({ page: 'knowledge-bases' })}>{t('kb.all')}</a></PageHeader>
      <form className="form" onSubmit={submit} aria-label={t('kb.form')}>
        <Field label={t('common.id')} htmlFor="kb-id"><input id="kb-id" value={id} onChange={(e) => setId(e.target.value)} required /></Field>
        <Field label={t('common.name')} htmlFor="kb-name"><input id="kb-name" value={name} onChange={(e) => setName(e.target.value)} required /></Field>
        <Field label={t('kb.description')} htmlFor="kb-description"><textarea id="kb-description" rows={2} value={description} onChange={(e) => setDescription(e.target.value)} /></Field>
        <Field label={t('kb.source')} htmlFor="kb-source">
          <select id="kb-source" value={source} onChange={(e) => setSource(e.target.value)}>
            <option value="">{t('kb.sourceDocuments')}</option>
            {retrievers.map((r) => <option key={`${r.plugin}/${r.name}`} value={`${r.plugin}\u0000${r.name}`} translate="no">{t('kb.sourceRetriever', { plugin: r.plugin, name: r.name })}</option>)}
          </select>
        </Field>
        {source ? null : (
          <>
            <Field label={t('kb.embeddingModel')} htmlFor="kb-embedding-model">
              <select id="kb-embedding-model" value={chosenModel} onChange={(e) => setEmbeddingModelId(e.target.value)}>
                {embedding.map((m) => <option key={m.id} value={m.id} translate="no">{m.name} ({m.id})</option>)}
              </select>
            </Field>
            {models.data && embedding.length === 0 ? <p className="hint">{t('kb.noEmbeddingModel')}</p> : null}
          </>
        )}
        <Field label={t('kb.rerankModel')} htmlFor="kb-rerank-model">
          <select id="kb-rerank-model" value={rerankModelId} onChange={(e) => setRerankModelId(e.target.value)}>
            <option value="">{t('kb.none')}</option>
            {rerank.map((m) => <option key={m.id} value={m.id} translate="no">{m.name} ({m.id})</option>)}
          </select>
        </Field>
        {source ? null : (
          <>
            <Field label={t('kb.chunkSize')} htmlFor="kb-chunk-size"><input id="kb-chunk-size" inputMode="numeric" value={chunkSize} onChange={(e) => setChunkSize(e.target.value)} /></Field>
            <Field label={t('kb.chunkOverlap')} htmlFor="kb-chunk-overlap"><input id="kb-chunk-overlap" inputMode="numeric" value={chunkOverlap} onChange={(e) => setChunkOverlap(e.target.value)} /></Field>
          </>
        )}
        <Field label={t('kb.topK')} htmlFor="kb-top-k"><input id="kb-top-k" inputMode="numeric" value={topK} onChange={(e) => setTopK(e.target.value)} /></Field>
        {source ? null : <RetrievalModeField id="kb-retrieval-mode" value={retrievalMode} onChange={setRetrievalMode} />}
        <ErrorNote error={models.error ?? plugins.error} />
        <div className="buttons"><button type="submit" disabled={!canWrite || save.busy || (!source && !chosenModel)}>{save.busy ? t('common.saving') : t('kb.create')}</button></div>
        <ErrorNote error={save.error} />
      </form>
    </section>
  );
}

function RetrievalModeField({ id, value, onChange }: { id: string; value: AdminApi.KnowledgeRetrievalMode; onChange: (mode: AdminApi.KnowledgeRetrievalMode) => void }) {
  const { t } = useI18n();
  return (
    <Field label={t('kb.retrievalMode')} htmlFor={id}>
      <select id={id} value={value} onChange={(e) => onChange(MODES.find((m) => m === e.target.value) ?? 'hybrid')}>
        {MODES.map((m) => <option key={m} value={m}>{t(`kb.mode.${m}`)}</option>)}
      </select>
    </Field>
  );
}

/**
 * The editable settings: name, description, retrieval (mode, chunks per question, rerank model), and
 * the chunking (embedding model, chunk size and overlap), whose change ingests every document again.
 */
function KnowledgeBaseSettings({ info, onSaved }: { info: AdminApi.KnowledgeBase; onSaved: () => void }) {
  const models = useLoad((signal) => listAll('/models', AdminApi.Model, { signal }), []);
  const rerank = models.data?.items.filter((m) => m.abilities.includes('rerank')) ?? [];
  const embedding = models.data?.items.filter((m) => m.abilities.includes('embedding')) ?? [];
  const [name, setName] = useState(info.name);
  const [description, setDescription] = useState(info.description);
  const [topK, setTopK] = useState(String(info.topK));
  const [rerankModelId, setRerankModelId] = useState(info.rerankModelId ?? '');
  const [retrievalMode, setRetrievalMode] = useState(info.retrievalMode);
  const [embeddingModelId, setEmbeddingModelId] = useState(info.embeddingModelId);
  const [chunkSize, setChunkSize] = useState(String(info.chunkSize));
  const [chunkOverlap, setChunkOverlap] = useState(String(info.chunkOverlap));
  const save = useAction();
  const { t } = useI18n();
  const documents = info.documents.pending + info.documents.processing + info.documents.done + info.documents.failed;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const rechunk = !info.retriever && embeddingModelId !== info.embeddingModelId || Number(chunkSize) !== info.chunkSize || Number(chunkOverlap) !== info.chunkOverlap;
    if (rechunk && documents > 0 && !confirm(t('kb.rechunkConfirm', { n: documents }))) return;
    void save.run(async () => {
      const chunking = info.retriever ? {} : { retrievalMode, embeddingModelId, chunkSize: Number(chunkSize), chunkOverlap: Number(chunkOverlap) };
      const saved = await request('PATCH', base(info.id), AdminApi.KnowledgeBase, {
        body: { name: name.trim(), description, topK: Number(topK), rerankModelId: rerankModelId || null, ...chunking },
      });
      // The form shows what was stored (a name trimmed, say); the page's header and meta line reload.
      setName(saved.name);
      setDescription(saved.description);
      setTopK(String(saved.topK));
      setRerankModelId(saved.rerankModelId ?? '');
      setRetrievalMode(saved.retrievalMode);
      setEmbeddingModelId(saved.embeddingModelId);
      setChunkSize(String(saved.chunkSize));
      setChunkOverlap(String(saved.chunkOverlap));
      onSaved();
      return t('kb.settingsSaved');
    });
  };

  return (
    <form className="form" onSubmit={submit} aria-label={t('kb.settingsForm')}>
      <h3>{t('kb.settings')}</h3>
      <p className="hint">{t('kb.settingsHint')}</p>
      <Field label={t('common.name')} htmlFor="kb-edit-name"><input id="kb-edit-name" value={name} onChange={(e) => setName(e.target.value)} required /></Field>
      <Field label={t('kb.description')} htmlFor="kb-edit-description"><textarea id="kb-edit-description" rows={2} value={description} onChange={(e) => setDescription(e.target.value)} /></Field>
      {info.retriever ? null : <RetrievalModeField id="kb-edit-retrieval-mode" value={retrievalMode} onChange={setRetrievalMode} />}
      <Field label={t('kb.topK')} htmlFor="kb-edit-top-k"><input id="kb-edit-top-k" inputMode="numeric" value={topK} onChange={(e) => setTopK(e.target.value)} /></Field>
      <Field label={t('kb.rerankModel')} htmlFor="kb-edit-rerank-model">
        <select id="kb-edit-rerank-model" value={rerankModelId} onChange={(e) => setRerankModelId(e.target.value)}>
          <option value="">{t('kb.none')}</option>
          {/* The current one even before the list arrives (or when it lost the ability), so the form does not clear it. */}
          {info.rerankModelId && !rerank.some((m) => m.id === info.rerankModelId) ? <option value={info.rerankModelId} translate="no">{info.rerankModelId}</option> : null}
          {rerank.map((m) => <option key={m.id} value={m.id} translate="no">{m.name} ({m.id})</option>)}
        </select>
      </Field>
      {info.retriever ? null : (
        <>
          <Field label={t('kb.embeddingModel')} htmlFor="kb-edit-embedding-model">
            <select id="kb-edit-embedding-model" value={embeddingModelId} onChange={(e) => setEmbeddingModelId(e.target.value)}>
              {embedding.some((m) => m.id === info.embeddingModelId) ? null : <option value={info.embeddingModelId} translate="no">{info.embeddingModelId}</option>}
              {embedding.map((m) => <option key={m.id} value={m.id} translate="no">{m.name} ({m.id})</option>)}
            </select>
          </Field>
          <Field label={t('kb.chunkSize')} htmlFor="kb-edit-chunk-size"><input id="kb-edit-chunk-size" inputMode="numeric" value={chunkSize} onChange={(e) => setChunkSize(e.target.value)} /></Field>
          <Field label={t('kb.chunkOverlap')} htmlFor="kb-edit-chunk-overlap"><input id="kb-edit-chunk-overlap" inputMode="numeric" value={chunkOverlap} onChange={(e) => setChunkOverlap(e.target.value)} /></Field>
        </>
      )}
      <ErrorNote error={models.error} />
      <div className="buttons"><button type="submit" disabled={save.busy}>{save.busy ? t('common.saving') : t('common.save')}</button></div>
      <ErrorNote error={save.error} />
      <DoneNote text={save.done} />
    </form>
  );
}

function KnowledgeBaseView({ id, canWrite }: { id: string; canWrite: boolean }) {
  const kb = useLoad((signal) => request('GET', base(id), AdminApi.KnowledgeBase, { signal }), [id]);
  const docs = useLoad((signal) => listAll(`${base(id)}/documents`, AdminApi.KnowledgeDocument, { signal }), [id]);
  const upload = useAction();
  const act = useAction();
  const remove = useAction();
  const fileInput = useRef<HTMLInputElement>(null);
  const i18n = useI18n();
  const { t } = i18n;
  const inFlight = docs.data?.items.some((d) => d.status === 'pending' || d.status === 'processing') ?? false;
  const reloadAll = () => { kb.reload(); docs.reload(); };

  useEffect(() => {
    if (!inFlight) return;
    const timer = setTimeout(reloadAll, REFRESH_MS);
    return () => clearTimeout(timer);
  }, [inFlight, docs.data]);

  // The knowledge base's counts and its documents load side by side: when the last document settles,
  // the counts may have been read a moment before it did. Read them once more then.
  const wasInFlight = useRef(false);
  useEffect(() => {
    if (wasInFlight.current && !inFlight) kb.reload();
    wasInFlight.current = inFlight;
  }, [inFlight]);

  if (kb.error) return <ErrorNote error={kb.error} />;
  if (!kb.data) return <Busy on />;
  const info = kb.data;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void upload.run(async () => {
      const file = fileInput.current?.files?.[0];
      if (!file) throw new Error(t('kb.chooseFile'));
      const form = new FormData();
      form.append(AdminApi.KNOWLEDGE_UPLOAD_FIELD, file, file.name);
      const done = await request('POST', `${base(id)}/documents`, AdminApi.KnowledgeDocumentUploaded, { form });
      if (fileInput.current) fileInput.current.value = '';
      reloadAll();
      return done.outcome === 'unchanged' ? t('kb.unchanged', { name: done.document.name }) : t('kb.uploaded', { name: done.document.name });
    });
  };

  return (
    <section>
      <PageHeader title={t('kb.detailTitle', { name: info.name })}>
        <button onClick={reloadAll} disabled={docs.loading}>{t('common.refresh')}</button>
        <a href={formatRoute({ page: 'knowledge-bases' })}>{t('kb.all')}</a>
      </PageHeader>
      <p className="meta">{info.retriever
        ? t('kb.metaRetriever', { id: info.id, plugin: info.retriever.plugin, name: info.retriever.name, topK: info.topK })
        : t('kb.meta', { id: info.id, model: info.embeddingModelId, size: info.chunkSize, overlap: info.chunkOverlap, topK: info.topK })}</p>
      {info.description ? <p translate="no">{info.description}</p> : null}
      {info.retriever ? null : <p><Counts kb={info} /></p>}
      {canWrite ? <KnowledgeBaseSettings key={info.id} info={info} onSaved={kb.reload} /> : null}
      {canWrite && !info.retriever ? (
        <form className="form" onSubmit={submit} aria-label={t('kb.uploadLabel')}>
          <Field label={t('kb.uploadLabel')} htmlFor="kb-file" hint={<>{t('kb.uploadHint', { mb: Math.floor(LIMITS.knowledgeDocumentBytes / 1_048_576) })} <span className="mono" translate="no">{FORMATS}</span></>}>
            <input id="kb-file" type="file" ref={fileInput} accept={FORMATS.split(' ').join(',')} />
          </Field>
          <div className="buttons"><button type="submit" disabled={upload.busy}>{upload.busy ? t('kb.uploading') : t('kb.upload')}</button></div>
          <ErrorNote error={upload.error} />
          <DoneNote text={upload.done} />
        </form>
      ) : null}
      {info.retriever ? null : <h3>{t('kb.documents')}</h3>}
      <ErrorNote error={docs.error ?? act.error} />
      <DoneNote text={act.done} />
      {info.retriever ? null : docs.data ? (
        <table>
          <thead><tr><th>{t('common.name')}</th><th>{t('kb.type')}</th><th>{t('kb.status')}</th><th>{t('kb.progress')}</th><th>{t('kb.chunks')}</th><th>{t('kb.size')}</th><th>{t('kb.reason')}</th><th>{t('common.updated')}</th>{canWrite ? <th>{t('kb.actions')}</th> : null}</tr></thead>
          <tbody>
            {docs.data.items.map((d) => (
              <tr key={d.id} data-id={d.id} data-name={d.name} data-status={d.status}>
                <td translate="no">{d.name}</td>
                <td translate="no">{d.type}</td>
                <td className={`status ${d.status}`}>{t(`kb.status.${d.status}`)}</td>
                <td>{d.progress}%</td>
                <td>{d.chunks}</td>
                <td>{t('kb.bytes', { n: d.bytes })}</td>
                <td className="kb-error" translate="no">{d.error ?? ''}</td>
                <td>{i18n.dateTime(d.updatedAt)}</td>
                {canWrite ? (
                  <td>
                    <button type="button" disabled={act.busy} onClick={() => void act.run(async () => {
                      await request('POST', `${base(id)}/documents/${encodeURIComponent(d.id)}/reindex`, AdminApi.KnowledgeDocument);
                      reloadAll();
                      return t('kb.reindexed', { name: d.name });
                    })}>{t('kb.reindex')}</button>{' '}
                    <button type="button" className="danger" disabled={act.busy} onClick={() => {
                      if (!confirm(t('kb.deleteDocConfirm', { name: d.name }))) return;
                      void act.run(async () => {
                        await request('DELETE', `${base(id)}/documents/${encodeURIComponent(d.id)}`, null);
                        reloadAll();
                      });
                    }}>{t('common.delete')}</button>
                  </td>
                ) : null}
              </tr>
            ))}
            {docs.data.items.length === 0 ? <tr><td colSpan={canWrite ? 9 : 8} className="empty">{t('kb.noDocuments')}</td></tr> : null}
          </tbody>
        </table>
      ) : <Busy on />}
      {canWrite ? (
        <div className="buttons">
          <button type="button" className="danger" disabled={remove.busy} onClick={() => {
            if (!confirm(t('kb.deleteConfirm', { name: info.name }))) return;
            void remove.run(async () => {
              await request('DELETE', base(id), null);
              location.hash = formatRoute({ page: 'knowledge-bases' });
            });
          }}>{t('common.delete')}</button>
        </div>
      ) : null}
      <ErrorNote error={remove.error} />
    </section>
  );
}
