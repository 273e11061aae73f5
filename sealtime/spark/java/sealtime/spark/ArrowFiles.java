package sealtime.spark;

import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;
import org.apache.spark.sql.execution.arrow.ArrowBatchStreamWriter;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Collects a DataFrame as Arrow IPC stream files, one per partition, written by the tasks
 * themselves into a directory the driver reads (sealtime.spark.arrow_files).
 *
 * <p>PySpark's toArrow sends every Arrow batch as a task result to the driver JVM, which
 * serialises it again into a socket that Python reads: three copies and most of the
 * driver's CPU for a large result. Here each task writes its batches once, in the
 * stream format Spark's own collection uses (same schema, same batches), and the driver
 * only learns the file names. The files are local: sealtime uses this in local mode,
 * where the tasks run in the driver's JVM.
 */
public final class ArrowFiles {
  private ArrowFiles() {}

  /** Runs one Spark job; returns the path of partition i's file at index i. */
  public static String[] collect(Dataset<Row> df, String dir) {
    org.apache.spark.sql.classic.Dataset<Row> ds = (org.apache.spark.sql.classic.Dataset<Row>) df;
    QueryExecution qe = ds.queryExecution();
    SQLConf conf = ds.sparkSession().sessionState().conf();
    String timeZone = conf.sessionLocalTimeZone();
    boolean duplicates = "legacy".equals(conf.pandasStructHandlingMode());
    boolean largeVarTypes = conf.arrowUseLargeVarTypes();
    StructType schema = ds.schema();
    Function2<Integer, Iterator<byte[]>, Iterator<String>> write =
        (index, batches) -> {
          TaskContext task = TaskContext.get();
          // (one file per attempt: a retried or speculative attempt never shares a file)
          String path = dir + "/part-" + index + "-" + task.attemptNumber();
          try (OutputStream out = new BufferedOutputStream(new FileOutputStream(path), 1 << 20)) {
            ArrowBatchStreamWriter writer =
                new ArrowBatchStreamWriter(schema, out, timeZone, duplicates, largeVarTypes);
            writer.writeBatches(CollectionConverters.asScala(batches));
            writer.end();
          }
          return Collections.singletonList(index + "\t" + path).iterator();
        };
    List<String> written =
        SQLExecution.withNewExecutionId(
            qe,
            Option.apply("sealtime: collect as Arrow files"),
            () -> ds.toArrowBatchRdd(qe.executedPlan()).toJavaRDD().mapPartitionsWithIndex(write, false).collect());
    String[] paths = new String[written.size()];
    for (String line : written) {
      int tab = line.indexOf('\t');
      paths[Integer.parseInt(line.substring(0, tab))] = line.substring(tab + 1);
    }
    return paths;
  }
}
