"""What a read asks, made safe for both legs: the typed query analysed into words and tokens
(`analysis`) and the filters (`filters`: project, source, time) as LanceDB SQL and Tantivy queries."""
