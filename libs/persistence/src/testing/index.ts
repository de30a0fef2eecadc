export { createTempDatabase, testServerUrl, type TempDatabase } from './temp-database.js';
