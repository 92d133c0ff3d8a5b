"""Report builders: each reads result records and writes one table or figure (Markdown + PNG)."""
