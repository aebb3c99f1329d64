from graphgps_ext.network.model import GPSModel, num_parameters

__all__ = ['GPSModel', 'num_parameters']
